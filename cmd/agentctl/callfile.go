package main

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus/objref"
	"github.com/agentfleet/agentfleet/internal/bus/toolrpc"
)

// writeFile writes the file a call returned, its first ref block (read
// from the fleet's object store, streamed, its sha256 checked) or else its
// first image, to m.Output, and deletes the call's objects. It says what
// it wrote on stderr.
func (m *Main) writeFile(ctx context.Context, call *toolrpc.Call, res *agentfleet.ToolResult) error {
	var file *agentfleet.Content
	for i := range res.Content {
		if t := res.Content[i].Type; t == agentfleet.ContentRef || t == agentfleet.ContentImage && file == nil {
			file = &res.Content[i]
			if t == agentfleet.ContentRef {
				break
			}
		}
	}
	if file == nil {
		return fmt.Errorf("-o %s: the result of %s holds no file (no ref block, no image): %s", m.Output, call.Name, shorten(resultText(res), 200))
	}
	var r io.Reader
	want := file.SHA256
	if file.Type == agentfleet.ContentImage {
		r = base64.NewDecoder(base64.StdEncoding, strings.NewReader(file.Data))
	} else {
		st, err := objref.OpenOn(ctx, m.conn.NATS(), objref.Config{})
		if err != nil {
			return fmt.Errorf("-o %s: %w", m.Output, err)
		}
		defer st.DeleteSession(context.WithoutCancel(ctx), call.Agent, call.Session)
		rc, _, err := st.Open(ctx, file.Ref)
		if err != nil {
			return fmt.Errorf("-o %s: %w", m.Output, err)
		}
		defer rc.Close()
		r = rc
	}
	n, sum, err := m.copyOut(r)
	if err != nil {
		return fmt.Errorf("-o %s: %w", m.Output, err)
	}
	if want != "" && sum != want {
		return fmt.Errorf("-o %s: the %d bytes written have sha256 %s, the result said %s", m.Output, n, sum, want)
	}
	fmt.Fprintf(m.Stderr, "wrote %d bytes (%s, sha256 %s) to %s\n", n, file.MIMEType, sum, m.Output)
	return nil
}

// copyOut copies r to m.Output, through a temporary file renamed once
// whole, and returns the bytes and their sha256.
func (m *Main) copyOut(r io.Reader) (int64, string, error) {
	h := sha256.New()
	if m.Output == "-" {
		n, err := io.Copy(io.MultiWriter(m.Stdout, h), r)
		return n, hex.EncodeToString(h.Sum(nil)), err
	}
	f, err := os.CreateTemp(filepath.Dir(m.Output), ".agentctl-*")
	if err != nil {
		return 0, "", err
	}
	n, err := io.Copy(io.MultiWriter(f, h), r)
	err = errors.Join(err, f.Close())
	if err == nil {
		err = os.Rename(f.Name(), m.Output)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return n, hex.EncodeToString(h.Sum(nil)), err
}

// prefixed returns " "+s, or "" for none.
func prefixed(s string) string {
	if s == "" {
		return ""
	}
	return " " + s
}
