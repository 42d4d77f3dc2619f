package partition_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	"github.com/agentfleet/agentfleet/internal/bus/partition"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// serving records which member serves which partition, and fails the test
// the moment a member acquires a partition that another still serves with
// a lease that holds (a dead member does not release; its lease must be
// over by then).
type serving struct {
	t      *testing.T
	mu     sync.Mutex
	by     map[int]string
	tables map[string]*partition.Table
}

func (s *serving) member(id string) partition.Config {
	return partition.Config{
		TTL: time.Second,
		Acquire: func(_ context.Context, p int) error {
			s.mu.Lock()
			defer s.mu.Unlock()
			if other, ok := s.by[p]; ok && other != id {
				if tb := s.tables[other]; tb == nil || tb.Valid() == nil {
					s.t.Errorf("partition %d acquired by %s while %s serves it under a lease that holds", p, id, other)
				}
			}
			s.by[p] = id
			return nil
		},
		Release: func(p int) {
			s.mu.Lock()
			defer s.mu.Unlock()
			if s.by[p] == id {
				delete(s.by, p)
			}
		},
		Lost: func(error) {
			s.mu.Lock()
			defer s.mu.Unlock()
			for p, o := range s.by {
				if o == id {
					delete(s.by, p)
				}
			}
		},
	}
}

func (s *serving) counts() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := map[string]int{}
	for _, o := range s.by {
		n[o]++
	}
	return n
}

func join(t *testing.T, srv *server.Server, s *serving, id string) (*partition.Table, *nats.Conn) {
	t.Helper()
	nc := bustest.MustConnect(t, srv)
	js, _ := jetstream.New(nc)
	subjects, _ := bus.NewSubjects("")
	tb, err := partition.New(context.Background(), js, subjects, id, s.member(id))
	if err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	s.tables[id] = tb
	s.mu.Unlock()
	if err := tb.Join(context.Background()); err != nil {
		t.Fatal(err)
	}
	return tb, nc
}

// TestTableSharesAndHandsOver joins three members one by one: they end with
// 21, 22 and 21 partitions, never two on one partition. One leaves: the
// other two take its share at once. One dies (its connection is cut): the
// last takes everything once the dead one's lease is over, not before.
func TestTableSharesAndHandsOver(t *testing.T) {
	srv := bustest.MustRunNATS(t)
	s := &serving{t: t, by: map[int]string{}, tables: map[string]*partition.Table{}}
	var tables []*partition.Table
	var conns []*nats.Conn
	for i := range 3 {
		tb, nc := join(t, srv, s, fmt.Sprintf("m%d", i))
		tables, conns = append(tables, tb), append(conns, nc)
		bustest.Eventually(t, fmt.Sprintf("%d members sharing", i+1), func() bool {
			n := s.counts()
			total := 0
			for _, id := range []string{"m0", "m1", "m2"}[:i+1] {
				if k := n[id]; k < 64/(i+1) || k > 64/(i+1)+1 {
					return false
				}
				total += n[id]
			}
			return total == 64
		})
	}
	for _, tb := range tables {
		if got := len(tb.Members()); got != 3 {
			t.Errorf("%s sees %d members, want 3", tb.ID(), got)
		}
	}
	if err := tables[2].Leave(); err != nil {
		t.Fatal(err)
	}
	bustest.Eventually(t, "m2's share handed over", func() bool {
		n := s.counts()
		return n["m2"] == 0 && n["m0"]+n["m1"] == 64 && n["m0"] == 32
	})
	conns[1].Close() // m1 dies without a word: it never releases
	bustest.Eventually(t, "m0 to own every partition", func() bool { return s.counts()["m0"] == 64 })
	if err := tables[0].Leave(); err != nil {
		t.Error(err)
	}
}
