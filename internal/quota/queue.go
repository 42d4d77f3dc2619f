package quota

import "github.com/agentfleet/agentfleet"

// Rank orders priorities: interactive (0) before batch (2); an empty or
// unknown priority is in between (1), the default of a run that names
// none.
func Rank(priority string) int {
	switch priority {
	case agentfleet.PriorityInteractive:
		return 0
	case agentfleet.PriorityBatch:
		return 2
	}
	return 1
}

// Ranks is the number of priority ranks.
const Ranks = 3

// RankName names a rank, for metrics: "interactive", "default", "batch".
func RankName(rank int) string {
	switch rank {
	case 0:
		return agentfleet.PriorityInteractive
	case 2:
		return agentfleet.PriorityBatch
	}
	return "default"
}

// Queue is one orchestrator's calls waiting for one model, in the order
// they are offered to the shared quota: by priority rank, and within a
// rank round-robin across agents (each agent's calls in their order), so
// that one busy agent cannot starve another. The zero Queue is empty. It
// is not safe for concurrent use.
type Queue[T any] struct {
	ranks [Ranks]rankQueue[T]
	n     int
}

type rankQueue[T any] struct {
	// agents in round-robin order: the head's next call goes first.
	agents []string
	calls  map[string][]T
}

// Push adds a call of agent at priority.
func (q *Queue[T]) Push(priority, agent string, v T) {
	r := &q.ranks[Rank(priority)]
	if r.calls == nil {
		r.calls = map[string][]T{}
	}
	if len(r.calls[agent]) == 0 {
		r.agents = append(r.agents, agent)
	}
	r.calls[agent] = append(r.calls[agent], v)
	q.n++
}

// Len returns the calls waiting.
func (q *Queue[T]) Len() int { return q.n }

// LenRank returns the calls waiting at rank.
func (q *Queue[T]) LenRank(rank int) int {
	n := 0
	for _, cs := range q.ranks[rank].calls {
		n += len(cs)
	}
	return n
}

// Peek returns the call that goes next and its rank, without removing
// it; false when the queue is empty.
func (q *Queue[T]) Peek() (T, int, bool) {
	for i := range q.ranks {
		r := &q.ranks[i]
		if len(r.agents) > 0 {
			return r.calls[r.agents[0]][0], i, true
		}
	}
	var zero T
	return zero, 0, false
}

// Pop removes the call Peek returns, and moves its agent to the back of
// its rank's turn.
func (q *Queue[T]) Pop() (T, bool) {
	for i := range q.ranks {
		r := &q.ranks[i]
		if len(r.agents) == 0 {
			continue
		}
		a := r.agents[0]
		v := r.calls[a][0]
		r.calls[a] = r.calls[a][1:]
		r.agents = r.agents[1:]
		if len(r.calls[a]) > 0 {
			r.agents = append(r.agents, a)
		} else {
			delete(r.calls, a)
		}
		q.n--
		return v, true
	}
	var zero T
	return zero, false
}

// Remove takes out the first call for which is reports true (a call whose
// caller gave up), and reports whether there was one.
func (q *Queue[T]) Remove(is func(T) bool) bool {
	for i := range q.ranks {
		r := &q.ranks[i]
		for ai, a := range r.agents {
			for ci, v := range r.calls[a] {
				if !is(v) {
					continue
				}
				r.calls[a] = append(r.calls[a][:ci:ci], r.calls[a][ci+1:]...)
				if len(r.calls[a]) == 0 {
					delete(r.calls, a)
					r.agents = append(r.agents[:ai:ai], r.agents[ai+1:]...)
				}
				q.n--
				return true
			}
		}
	}
	return false
}

// Each calls f for every waiting call, in no particular order.
func (q *Queue[T]) Each(f func(T)) {
	for i := range q.ranks {
		for _, cs := range q.ranks[i].calls {
			for _, v := range cs {
				f(v)
			}
		}
	}
}

// Urgent reports whether more than skip interactive calls wait.
func (q *Queue[T]) Urgent(skip int) bool { return q.LenRank(0) > skip }
