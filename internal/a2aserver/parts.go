package a2aserver

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/agentfleet/agentfleet"
)

// Parts turns fleet content into A2A parts: text as text parts, images as
// file parts with their bytes; other blocks (tool calls) are left out.
func Parts(content []agentfleet.Content) []a2a.Part {
	var out []a2a.Part
	for _, c := range content {
		switch c.Type {
		case agentfleet.ContentText:
			if c.Text != "" {
				out = append(out, a2a.TextPart{Text: c.Text})
			}
		case agentfleet.ContentImage:
			out = append(out, a2a.FilePart{File: a2a.FileBytes{FileMeta: a2a.FileMeta{MimeType: c.MIMEType}, Bytes: c.Data}})
		}
	}
	return out
}

// Content turns the parts of an A2A message into fleet content: text
// parts as text, data parts as their JSON in a text block, files with
// bytes of an image type as images. A file by URI is refused (the server
// fetches nothing a peer names), as is any other file, and a message
// without content; the error names the part.
func Content(parts []a2a.Part) ([]agentfleet.Content, error) {
	var out []agentfleet.Content
	for i, p := range parts {
		switch p := p.(type) {
		case a2a.TextPart:
			out = append(out, agentfleet.Text(p.Text))
		case a2a.DataPart:
			b, err := json.Marshal(p.Data)
			if err != nil {
				return nil, fmt.Errorf("part %d: data: %w", i, err)
			}
			out = append(out, agentfleet.Text(string(b)))
		case a2a.FilePart:
			fb, ok := p.File.(a2a.FileBytes)
			if !ok {
				return nil, fmt.Errorf("part %d: a file by URI is not fetched: send its bytes", i)
			}
			if !strings.HasPrefix(fb.MimeType, "image/") {
				return nil, fmt.Errorf("part %d: file of type %q: only images (image/...) are taken", i, fb.MimeType)
			}
			c := agentfleet.Image(fb.Bytes, fb.MimeType)
			if err := c.Validate(); err != nil {
				return nil, fmt.Errorf("part %d: %w", i, err)
			}
			out = append(out, c)
		default:
			return nil, fmt.Errorf("part %d: unknown kind of part %T", i, p)
		}
	}
	if strings.TrimSpace(agentfleet.JoinText(out)) == "" && !hasImage(out) {
		return nil, fmt.Errorf("the message has no content: give a text part")
	}
	return out, nil
}

func hasImage(cs []agentfleet.Content) bool {
	for _, c := range cs {
		if c.Type == agentfleet.ContentImage {
			return true
		}
	}
	return false
}

// Decision reads a decision on a call waiting for approval from the parts
// of the message that answers an input-required task: a data part
// {"approve": true|false, "reason"}, or a text whose first word is
// approve (yes, ok) or reject (deny, no), the rest being the reason.
func Decision(parts []a2a.Part) (approve bool, reason string, err error) {
	for _, p := range parts {
		switch p := p.(type) {
		case a2a.DataPart:
			a, ok := p.Data["approve"].(bool)
			if !ok {
				return false, "", fmt.Errorf(`the data part has no boolean "approve"`)
			}
			r, _ := p.Data["reason"].(string)
			return a, r, nil
		case a2a.TextPart:
			word, rest, _ := strings.Cut(strings.TrimSpace(p.Text), " ")
			switch strings.ToLower(strings.TrimRight(word, ".!,:")) {
			case "approve", "approved", "yes", "ok":
				return true, strings.TrimSpace(rest), nil
			case "reject", "rejected", "deny", "denied", "no":
				return false, strings.TrimSpace(rest), nil
			}
			return false, "", fmt.Errorf("the text %q is no decision: begin it with approve or reject", clip(p.Text))
		}
	}
	return false, "", fmt.Errorf("the message holds no decision: send a text part \"approve\" or \"reject <reason>\"")
}
