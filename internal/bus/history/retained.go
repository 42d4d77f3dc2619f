package history

import (
	"context"
	"fmt"

	"github.com/agentfleet/agentfleet"
	"github.com/nats-io/nats.go/jetstream"
)

// RecordRetained marks a cut of the session's history by its retention
// bounds (package retention); its data is the Retained. Load leaves out
// every record stored before the last one's FirstSeq, whether or not the
// stream still holds them, so that a purge that did not happen (the owner
// died between the record and the purge) changes nothing of what a load
// sees, and the next cut purges them.
const RecordRetained = "retained"

// Retained is the data of a retained record (RecordRetained): the records
// stored before stream sequence FirstSeq are dropped (0 in a copy a fork
// made: nothing to drop there, the copy holds only what was kept), Runs
// whole runs of Records records and Bytes bytes. It carries what the
// dropped records meant for the records kept:
//
//   - Summary is the summary in force, its Covers counted from the first
//     message kept: 0 when it covers none of them (it stands for dropped
//     messages only, and is sent before the messages kept); nil when there
//     was none.
//   - Handoff is the last handoff dropped, when no kept record hands the
//     session over: the agent that serves the session stays the same.
//   - Forked is the forked record dropped, when the session was a fork:
//     where it came from stays known.
type Retained struct {
	FirstSeq uint64                     `json:"first_seq"`
	Runs     int                        `json:"runs"`
	Records  int                        `json:"records"`
	Bytes    int                        `json:"bytes"`
	Summary  *agentfleet.ContextSummary `json:"summary,omitempty"`
	Handoff  *Handoff                   `json:"handoff,omitempty"`
	Forked   *Forked                    `json:"forked,omitempty"`
}

// AppendRetained records a cut of the history (RecordRetained), fenced as
// every append is: only the session's owner, with the view of the
// session's last record, stores it.
func (w *Writer) AppendRetained(ctx context.Context, runID string, r *Retained) (uint64, error) {
	return w.appendFlush(ctx, Record{RunID: runID, Retained: r})
}

// Purge removes from the stream the session's stored messages before
// stream sequence below. Call it only below the FirstSeq of a stored
// retained record: what it removes, Load leaves out already.
func (s *Store) Purge(ctx context.Context, agent, session string, below uint64) error {
	if below <= 1 {
		return nil
	}
	err := s.str.Purge(ctx, jetstream.WithPurgeSubject(s.subjects.History(agent, session)), jetstream.WithPurgeSequence(below))
	if err != nil {
		return fmt.Errorf("history: purge session %s below %d: %w", session, below, err)
	}
	return nil
}

// applyRetained leaves out of st the records stored before the last
// retained record's FirstSeq, and counts them in Hidden.
func (st *Loaded) applyRetained() {
	var from uint64
	for i := len(st.Records) - 1; i >= 0; i-- {
		if r := st.Records[i].Retained; r != nil {
			// Never past the record itself: a record that says more
			// hides nothing stored after it.
			from = min(r.FirstSeq, st.Records[i].Seq)
			break
		}
	}
	if from <= 1 {
		return
	}
	st.RetainedFrom = from
	kept := st.Records[:0]
	for _, r := range st.Records {
		if r.Seq >= from {
			kept = append(kept, r)
		} else {
			st.Hidden++
		}
	}
	clear(st.Records[len(kept):])
	st.Records = kept
	sk := st.Skipped[:0]
	for _, s := range st.Skipped {
		if s.Seq >= from {
			sk = append(sk, s)
		} else {
			st.Hidden++
		}
	}
	st.Skipped = sk
}
