package check

import (
	"slices"
	"time"

	"github.com/agentfleet/agentfleet"
)

// ClassErased: a session the load deleted holds, at the end, something of
// before its delete: a history record of a message sent before it, a run
// other than the one of the message sent after it, an event of such a
// run, a stored input message from before; or its delete was never
// answered.
const ClassErased Class = "erased_left"

// ErasedPlan is a session the load deletes: its messages before the
// delete (published from the start, some still running when the delete
// comes), the delete's time after the load's start, and the one message
// published once the delete was answered.
type ErasedPlan struct {
	Name     string
	Before   []*Message
	DeleteAt time.Duration
	After    *Message
}

// StoredEvent is one event of an erased session left in the event stream.
type StoredEvent struct {
	Seq  uint64
	Type string
	Run  string
}

// ErasedState is what the streams hold of an erased session at the end,
// and whether its delete was answered.
type ErasedState struct {
	Deleted bool
	History []*Record
	Events  []StoredEvent
	// Input holds the user message ids of its stored input messages.
	Input []string
}

// AfterRuns returns the runs of the history whose user records are the
// message sent after the delete.
func AfterRuns(p *ErasedPlan, recs []*Record) map[string]bool {
	runs := map[string]bool{}
	for _, r := range recs {
		if u, ok := r.Msg.(*agentfleet.UserMessage); ok && u.ID == p.After.ID {
			runs[r.Run] = true
		}
	}
	return runs
}

// VerifyErased adds a ClassErased violation for everything an erased
// session holds of before its delete. The run of the message after the
// delete is checked as any other run is, by Verify with the session's plan
// holding that message alone (ErasedSessionPlan) and only that run's
// records (AfterRecords).
func (f *Findings) VerifyErased(plans []*ErasedPlan, states map[string]*ErasedState) {
	if f.Violations == nil {
		*f = *newFindings()
	}
	for _, p := range plans {
		st := states[p.Name]
		if st == nil || !st.Deleted {
			f.add(ClassErased, "session %s: its delete was never answered", p.Name)
			continue
		}
		before := map[string]bool{}
		for _, m := range p.Before {
			before[m.ID] = true
		}
		after := AfterRuns(p, st.History)
		for _, r := range st.History {
			if u, ok := r.Msg.(*agentfleet.UserMessage); ok && before[u.ID] {
				f.add(ClassErased, "session %s: history record %d holds message %s, sent before the delete", p.Name, r.Seq, Short(u.ID))
				continue
			}
			if !after[r.Run] {
				f.add(ClassErased, "session %s: history record %d of run %s, which is not the run of the message after the delete", p.Name, r.Seq, Short(r.Run))
			}
		}
		for _, e := range st.Events {
			if e.Run != "" && !after[e.Run] {
				f.add(ClassErased, "session %s: event %d (%s) of run %s, which is not the run of the message after the delete", p.Name, e.Seq, e.Type, Short(e.Run))
			}
		}
		for _, id := range st.Input {
			if before[id] {
				f.add(ClassErased, "session %s: the input stream holds message %s, sent before the delete", p.Name, Short(id))
			}
		}
	}
}

// ErasedSessionPlan is the plan Verify checks an erased session against:
// the message after the delete alone.
func ErasedSessionPlan(p *ErasedPlan) *SessionPlan {
	return &SessionPlan{Name: p.Name, Messages: []*Message{p.After}}
}

// AfterRecords returns the records of the runs of the message after the
// delete, in order: what Verify checks of an erased session.
func AfterRecords(p *ErasedPlan, recs []*Record) []*Record {
	after := AfterRuns(p, recs)
	return slices.DeleteFunc(slices.Clone(recs), func(r *Record) bool { return !after[r.Run] })
}
