package check

import (
	"bytes"
	"fmt"
	"sort"
)

// Acked is one message whose publish JetStream acknowledged: the stream
// sequence the acknowledgement named and the payload that was sent.
type Acked struct {
	Seq  uint64
	Data []byte
}

// AckedReport is what a stream kept of the messages it acknowledged, after
// a fault (a power cut): every acknowledged message must be stored at its
// sequence with its payload.
type AckedReport struct {
	// Acked is the number of acknowledged messages checked.
	Acked int
	// Kept is how many are stored at their sequence, unchanged.
	Kept int
	// Lost is how many are not stored at all.
	Lost int
	// Altered is how many are stored at their sequence with another
	// payload (a torn or reordered write).
	Altered int
	// Examples name the first few lost or altered sequences.
	Examples []string
}

// OK reports whether every acknowledged message was kept.
func (r AckedReport) OK() bool { return r.Lost == 0 && r.Altered == 0 }

// String sums the report up in one line.
func (r AckedReport) String() string {
	return fmt.Sprintf("%d acknowledged: %d kept, %d lost, %d altered %v", r.Acked, r.Kept, r.Lost, r.Altered, r.Examples)
}

// maxAckedExamples bounds AckedReport.Examples.
const maxAckedExamples = 5

// CheckAcked compares the acknowledged messages with what the stream
// stores after the fault, by sequence (stored maps a sequence to its
// payload; a sequence missing from it is lost). Two acknowledgements of one
// sequence count once, with the first payload.
func CheckAcked(acked []Acked, stored map[uint64][]byte) AckedReport {
	sorted := append([]Acked(nil), acked...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Seq < sorted[j].Seq })
	var r AckedReport
	for i, a := range sorted {
		if i > 0 && sorted[i-1].Seq == a.Seq {
			continue
		}
		r.Acked++
		got, ok := stored[a.Seq]
		switch {
		case !ok:
			r.Lost++
			if len(r.Examples) < maxAckedExamples {
				r.Examples = append(r.Examples, fmt.Sprintf("seq %d lost", a.Seq))
			}
		case !bytes.Equal(got, a.Data):
			r.Altered++
			if len(r.Examples) < maxAckedExamples {
				r.Examples = append(r.Examples, fmt.Sprintf("seq %d holds %.40q, acknowledged %.40q", a.Seq, got, a.Data))
			}
		default:
			r.Kept++
		}
	}
	return r
}
