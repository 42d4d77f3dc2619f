package payload

import (
	"mime"
	"strings"
	"unicode/utf8"
)

// Defaults of ViewConfig.
const (
	// DefaultTextView is how much of a text file the model is shown; the
	// context policy may shorten it further.
	DefaultTextView = 16 << 10
	// DefaultImageView is the largest image shown to the model inline.
	DefaultImageView = 1 << 20
)

// ViewConfig bounds what the model is shown of an object; the zero value
// of a field means its default.
type ViewConfig struct {
	// TextBytes is the head of a text file the model is shown.
	TextBytes int64
	// ImageBytes is the largest image shown inline; a larger one is
	// described.
	ImageBytes int64
}

func (v ViewConfig) withDefaults() ViewConfig {
	if v.TextBytes <= 0 {
		v.TextBytes = DefaultTextView
	}
	if v.ImageBytes <= 0 {
		v.ImageBytes = DefaultImageView
	}
	return v
}

// View is what the model is shown of an object besides its description.
type View int

// The views.
const (
	ViewNone  View = iota // the description alone
	ViewText              // the head of the text, TextBytes at most
	ViewImage             // the image inline
)

// Choose returns the view of an object of size bytes of the media type
// mediaType, and how many of its bytes it reads.
func (v ViewConfig) Choose(mediaType string, size int64) (View, int64) {
	v = v.withDefaults()
	mt, _, err := mime.ParseMediaType(mediaType)
	if err != nil {
		return ViewNone, 0
	}
	switch {
	case isText(mt):
		return ViewText, min(size, v.TextBytes)
	case strings.HasPrefix(mt, "image/") && size <= v.ImageBytes:
		return ViewImage, size
	}
	return ViewNone, 0
}

func isText(mt string) bool {
	if strings.HasPrefix(mt, "text/") {
		return true
	}
	switch mt {
	case "application/json", "application/xml", "application/yaml", "application/x-ndjson", "application/csv", "application/javascript":
		return true
	}
	return strings.HasSuffix(mt, "+json") || strings.HasSuffix(mt, "+xml")
}

// TextHead returns the text of the head of a file of size bytes, cut back
// to a whole UTF-8 character, with a line that says what part it is.
func TextHead(head []byte, size int64) string {
	if int64(len(head)) < size {
		for i := 0; i < utf8.UTFMax && len(head) > 0 && !utf8.Valid(head); i++ {
			head = head[:len(head)-1]
		}
	}
	text := strings.ToValidUTF8(string(head), "\uFFFD")
	if int64(len(head)) >= size {
		return text
	}
	return text + "\n[… the first " + itoa(int64(len(head))) + " of " + itoa(size) + " bytes; the rest is in the file]"
}

func itoa(n int64) string {
	var b [20]byte
	i := len(b)
	if n == 0 {
		return "0"
	}
	for n > 0 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	return string(b[i:])
}
