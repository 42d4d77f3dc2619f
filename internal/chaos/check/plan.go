package check

import "time"

// Plan is the load: per session, its messages in publish order.
type Plan struct {
	Sessions []*SessionPlan
}

// SessionPlan is one session's messages.
type SessionPlan struct {
	Name string
	// Start is the delay before its first message.
	Start    time.Duration
	Messages []*Message
}

// Message is one user message of the load.
type Message struct {
	ID      string
	Session string
	// Gap is the wait after the previous message of the session.
	Gap time.Duration
	// Dup says the message is sent twice; DupHeader whether the second
	// copy has the first copy's Nats-Msg-Id (else only the payload id).
	Dup, DupHeader bool
}

// PublishOrder returns the session's ids in publish order.
func (s *SessionPlan) PublishOrder() []string {
	ids := make([]string, len(s.Messages))
	for i, m := range s.Messages {
		ids[i] = m.ID
	}
	return ids
}

// Count returns the messages and the duplicates of the plan.
func (p *Plan) Count() (messages, dups int) {
	for _, s := range p.Sessions {
		for _, m := range s.Messages {
			messages++
			if m.Dup {
				dups++
			}
		}
	}
	return
}
