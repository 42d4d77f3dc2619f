package check

import (
	"strings"
	"testing"
)

func TestCheckAcked(t *testing.T) {
	acked := func(seqs ...uint64) []Acked {
		var out []Acked
		for _, s := range seqs {
			out = append(out, Acked{Seq: s, Data: []byte{'m', byte('0' + s)}})
		}
		return out
	}
	stored := func(seqs ...uint64) map[uint64][]byte {
		out := map[uint64][]byte{}
		for _, s := range seqs {
			out[s] = []byte{'m', byte('0' + s)}
		}
		return out
	}
	altered := stored(1, 2, 3)
	altered[2] = []byte("torn")
	cases := []struct {
		name                   string
		acked                  []Acked
		stored                 map[uint64][]byte
		kept, lost, alt, total int
		ok                     bool
		example                string
	}{
		{name: "nothing acknowledged", stored: stored(1), ok: true},
		{name: "all kept", acked: acked(1, 2, 3), stored: stored(1, 2, 3), kept: 3, total: 3, ok: true},
		{name: "more stored than acknowledged", acked: acked(1, 2), stored: stored(1, 2, 3), kept: 2, total: 2, ok: true},
		{name: "tail lost", acked: acked(1, 2, 3, 4), stored: stored(1, 2), kept: 2, lost: 2, total: 4, example: "seq 3 lost"},
		{name: "all lost", acked: acked(1, 2, 3), stored: nil, lost: 3, total: 3, example: "seq 1 lost"},
		{name: "a hole", acked: acked(1, 2, 3), stored: stored(1, 3), kept: 2, lost: 1, total: 3, example: "seq 2 lost"},
		{name: "altered", acked: acked(1, 2, 3), stored: altered, kept: 2, alt: 1, total: 3, example: `seq 2 holds "torn"`},
		{name: "out of order and twice", acked: acked(3, 1, 3, 2), stored: stored(1, 2, 3), kept: 3, total: 3, ok: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := CheckAcked(c.acked, c.stored)
			if r.Kept != c.kept || r.Lost != c.lost || r.Altered != c.alt || r.Acked != c.total || r.OK() != c.ok {
				t.Errorf("got %v (ok %v), want %d acknowledged: %d kept, %d lost, %d altered (ok %v)", r, r.OK(), c.total, c.kept, c.lost, c.alt, c.ok)
			}
			if c.example != "" && !strings.Contains(strings.Join(r.Examples, "; "), c.example) {
				t.Errorf("examples %v, want one with %q", r.Examples, c.example)
			}
		})
	}
	many := acked(1, 2, 3, 4, 5, 6, 7, 8, 9)
	if r := CheckAcked(many, nil); len(r.Examples) != maxAckedExamples || r.Lost != 9 {
		t.Errorf("9 lost: %d examples, %d lost; want %d, 9", len(r.Examples), r.Lost, maxAckedExamples)
	}
}
