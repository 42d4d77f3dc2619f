package agentfleet

import (
	"fmt"
	"strings"
)

// RefScheme starts the address of a ref block: obj://<bucket>/<name>, the
// JetStream Object Store bucket and the object's name in it.
const RefScheme = "obj://"

// MaxRefLength bounds the address of a ref block, in bytes.
const MaxRefLength = 1024

// RefBlock returns a ref block: size bytes of type mimeType, whose SHA-256
// is sha (lowercase hex), kept as the object ref (obj://bucket/name); name
// is what the bytes are called, optionally (a file name).
func RefBlock(ref string, size int64, sha, mimeType, name string) Content {
	return Content{Type: ContentRef, Ref: ref, Size: size, SHA256: sha, MIMEType: mimeType, Name: name}
}

// ParseRef splits the address of a ref block into its bucket and object
// name, or says what is wrong with it.
func ParseRef(ref string) (bucket, name string, err error) {
	if len(ref) > MaxRefLength {
		return "", "", fmt.Errorf("$ref is %d bytes, over the bound of %d", len(ref), MaxRefLength)
	}
	rest, ok := strings.CutPrefix(ref, RefScheme)
	if !ok {
		return "", "", fmt.Errorf("$ref %q does not start with %s", cut(ref), RefScheme)
	}
	bucket, name, ok = strings.Cut(rest, "/")
	if !ok || bucket == "" || name == "" {
		return "", "", fmt.Errorf("$ref %q is not %s<bucket>/<name>", cut(ref), RefScheme)
	}
	for _, r := range bucket {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return "", "", fmt.Errorf("$ref %q: bucket %q is not letters, digits, _ and -", cut(ref), cut(bucket))
		}
	}
	for _, r := range name {
		if r < ' ' || r == 0x7f {
			return "", "", fmt.Errorf("$ref %q: the name holds a control character", cut(ref))
		}
	}
	return bucket, name, nil
}

// cut shortens s for an error message.
func cut(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

func (c Content) validateRef() error {
	if _, _, err := ParseRef(c.Ref); err != nil {
		return fmt.Errorf("ref block: %w", err)
	}
	if c.Size < 0 {
		return fmt.Errorf("ref block: size %d is negative", c.Size)
	}
	if len(c.SHA256) != 64 || strings.Trim(c.SHA256, "0123456789abcdef") != "" {
		return fmt.Errorf("ref block: sha256 %q is not 64 lowercase hex digits", cut(c.SHA256))
	}
	if c.MIMEType == "" {
		return fmt.Errorf("ref block: mime_type is required")
	}
	if c.Data != "" || c.Text != "" {
		return fmt.Errorf("ref block: has data or text; the bytes are in the object")
	}
	return nil
}

// DescribeRef returns what a model is told of a ref block it cannot be
// shown: what the bytes are, how many, and where they are.
func DescribeRef(c Content) string {
	name := c.Name
	if name != "" {
		name = " " + name
	}
	return fmt.Sprintf("[The tool returned a file%s (%s, %d bytes, sha256 %s), kept at %s.]", name, c.MIMEType, c.Size, c.SHA256, c.Ref)
}
