package partition

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/bustest"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// TestMemberGoneReadsTheLeader checks the read that decides a takeover: a
// member key never written, deleted or purged is gone, one that lives is
// not, and every read goes to the JetStream API's message get, which only
// the stream leader answers, never to the direct get that any replica
// answers (a follower's stale "not found" would hand over a partition
// whose owner lives). A partition key's value that is no member id (a
// wildcard, a space) is refused, not read as another member's key.
func TestMemberGoneReadsTheLeader(t *testing.T) {
	srv := bustest.MustRunNATS(t)
	nc := bustest.MustConnect(t, srv)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	subjects, err := bus.NewSubjects("")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tb, err := New(ctx, js, subjects, "m1", Config{TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	snoop := bustest.MustConnect(t, srv)
	var direct, leader atomic.Int64
	for subject, n := range map[string]*atomic.Int64{"$JS.API.DIRECT.GET.>": &direct, "$JS.API.STREAM.MSG.GET.>": &leader} {
		if _, err := snoop.Subscribe(subject, func(*nats.Msg) { n.Add(1) }); err != nil {
			t.Fatal(err)
		}
	}
	if err := snoop.Flush(); err != nil {
		t.Fatal(err)
	}
	gone := func(id string, want bool) {
		t.Helper()
		got, err := tb.memberGone(ctx, id)
		if err != nil || got != want {
			t.Fatalf("memberGone(%q) = %v, %v; want %v", id, got, err, want)
		}
	}
	gone("ghost", true)
	if _, err := tb.members.Put(ctx, "live", []byte(`{"id":"live"}`)); err != nil {
		t.Fatal(err)
	}
	gone("live", false)
	if err := tb.members.Delete(ctx, "live"); err != nil {
		t.Fatal(err)
	}
	gone("live", true)
	if _, err := tb.members.Put(ctx, "purged", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	gone("purged", false)
	if err := tb.members.Purge(ctx, "purged"); err != nil {
		t.Fatal(err)
	}
	gone("purged", true)
	for _, bad := range []string{"*", ">", "a b", "a.*", "", ".a", "a."} {
		if _, err := tb.memberGone(ctx, bad); err == nil || !strings.Contains(err.Error(), "is not a member id") {
			t.Errorf("memberGone(%q) = %v, want an error saying it is not a member id", bad, err)
		}
	}
	bustest.Eventually(t, "the snooping connection to see the five reads", func() bool { return leader.Load() >= 5 })
	if got := direct.Load(); got != 0 {
		t.Errorf("%d direct gets, want 0: the reads must go to the leader", got)
	}
	if got := leader.Load(); got != 5 {
		t.Errorf("%d message gets, want 5 (one per valid read)", got)
	}
}
