package payload

import (
	"strings"
	"testing"
)

func TestChoose(t *testing.T) {
	v := ViewConfig{TextBytes: 100, ImageBytes: 1000}
	for _, tc := range []struct {
		name, mt string
		size     int64
		view     View
		read     int64
	}{
		{"small text whole", "text/plain; charset=utf-8", 50, ViewText, 50},
		{"large csv head", "text/csv", 1 << 30, ViewText, 100},
		{"json head", "application/json", 500, ViewText, 100},
		{"vendor json", "application/vnd.api+json", 500, ViewText, 100},
		{"small image inline", "image/png", 999, ViewImage, 999},
		{"large image described", "image/png", 1001, ViewNone, 0},
		{"pdf described", "application/pdf", 10, ViewNone, 0},
		{"audio described", "audio/wav", 10, ViewNone, 0},
		{"bad media type", "text/", 10, ViewNone, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			view, n := v.Choose(tc.mt, tc.size)
			if view != tc.view || n != tc.read {
				t.Errorf("Choose(%q, %d) = %v, %d, want %v, %d", tc.mt, tc.size, view, n, tc.view, tc.read)
			}
		})
	}
}

func TestTextHead(t *testing.T) {
	if got := TextHead([]byte("whole"), 5); got != "whole" {
		t.Errorf("whole file: %q", got)
	}
	// "é" is two bytes: a head cut in its middle drops the half.
	got := TextHead([]byte("abc\xc3"), 10)
	if !strings.HasPrefix(got, "abc\n[… the first 3 of 10 bytes") {
		t.Errorf("cut head: %q", got)
	}
}
