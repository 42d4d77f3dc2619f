package quota

import (
	"slices"
	"testing"
)

func TestQueueOrder(t *testing.T) {
	var q Queue[string]
	for _, c := range []struct{ prio, agent, v string }{
		{"batch", "a", "a1"}, {"batch", "a", "a2"}, {"batch", "a", "a3"},
		{"batch", "b", "b1"}, {"", "c", "c1"}, {"batch", "b", "b2"},
		{"interactive", "d", "d1"},
	} {
		q.Push(c.prio, c.agent, c.v)
	}
	if q.Len() != 7 || q.LenRank(2) != 5 || !q.Urgent(0) || q.Urgent(1) {
		t.Fatalf("len %d, batch %d", q.Len(), q.LenRank(2))
	}
	if v, rank, _ := q.Peek(); v != "d1" || rank != 0 {
		t.Fatalf("peek = %s %d", v, rank)
	}
	var got []string
	for q.Len() > 0 {
		v, _ := q.Pop()
		got = append(got, v)
	}
	// interactive, default, then batch round-robin between a and b.
	if want := []string{"d1", "c1", "a1", "b1", "a2", "b2", "a3"}; !slices.Equal(got, want) {
		t.Errorf("order %v, want %v", got, want)
	}
	if _, ok := q.Pop(); ok {
		t.Error("pop of an empty queue")
	}
}

func TestQueueRemove(t *testing.T) {
	var q Queue[int]
	q.Push("batch", "a", 1)
	q.Push("batch", "b", 2)
	q.Push("batch", "a", 3)
	if !q.Remove(func(v int) bool { return v == 2 }) || q.Remove(func(v int) bool { return v == 9 }) {
		t.Fatal("remove")
	}
	var got []int
	for q.Len() > 0 {
		v, _ := q.Pop()
		got = append(got, v)
	}
	if !slices.Equal(got, []int{1, 3}) {
		t.Errorf("after remove: %v", got)
	}
}

func TestRank(t *testing.T) {
	for p, want := range map[string]int{"interactive": 0, "": 1, "whatever": 1, "batch": 2} {
		if got := Rank(p); got != want {
			t.Errorf("Rank(%q) = %d, want %d", p, got, want)
		}
	}
}
