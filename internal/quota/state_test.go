package quota

import (
	"strings"
	"testing"
	"time"
)

const sec = int64(time.Second)

func TestLimitsCheck(t *testing.T) {
	tests := []struct {
		l    Limits
		want string
	}{
		{Limits{}, ""},
		{Limits{RPM: 600, TPM: 100000, Concurrent: 4, Burst: 5}, ""},
		{Limits{RPM: -1}, "limit rpm -1 is negative"},
		{Limits{TPM: -5}, "limit tpm -5 is negative"},
		{Limits{Concurrent: -2}, "limit concurrent -2 is negative"},
		{Limits{RPM: 10, Burst: -1}, "limit burst -1 is negative"},
		{Limits{Burst: 3}, "limit burst 3 needs an rpm"},
		{Limits{RPM: 10, Burst: 11}, "limit burst 11 is above rpm 10"},
		{Limits{RPM: 1 << 41}, "is above"},
	}
	for _, tt := range tests {
		err := tt.l.Check()
		if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("Check(%+v) = %v, want %q", tt.l, err, tt.want)
		}
	}
}

func TestCaps(t *testing.T) {
	for _, tt := range []struct {
		l      Limits
		req    float64
		tokCap float64
	}{
		{Limits{RPM: 60}, 1, 1},                     // a quarter of 1/s, at least 1
		{Limits{RPM: 60000, TPM: 600000}, 250, 1e5}, // 1000/s → 250; 10 s of 10,000/s
		{Limits{RPM: 600, Burst: 7}, 7, 1},
	} {
		if got := tt.l.ReqCap(); got != tt.req {
			t.Errorf("%+v ReqCap = %v, want %v", tt.l, got, tt.req)
		}
		if got := tt.l.TokCap(); got != tt.tokCap {
			t.Errorf("%+v TokCap = %v, want %v", tt.l, got, tt.tokCap)
		}
	}
}

// TestTake steps a bucket through the cases of Take, each from the state
// the one before left.
func TestTake(t *testing.T) {
	l := Limits{RPM: 120, TPM: 6000, Concurrent: 2, Burst: 2} // 2 req/s, 100 tok/s, cap 1000 tok
	var s State
	now := 1000 * sec
	type step struct {
		name   string
		at     int64
		ask    Ask
		ok     bool
		reason string
		wait   time.Duration
	}
	steps := []step{
		{"first of a new key: full buckets", now, Ask{Lease: "a", LeaseUntil: now + 60*sec, Tokens: 300}, true, "", 0},
		{"second, the burst", now, Ask{Lease: "b", LeaseUntil: now + 60*sec, Tokens: 300}, true, "", 0},
		{"third: two in flight", now, Ask{Lease: "c", LeaseUntil: now + 60*sec, Tokens: 10}, false, ReasonConcurrency, PollWait},
	}
	for _, st := range steps {
		var d Decision
		s, d = Take(s, l, st.at, st.ask)
		if d.Granted != st.ok || d.Reason != st.reason || d.Wait != st.wait {
			t.Fatalf("%s: %+v, want granted %v reason %q wait %v", st.name, d, st.ok, st.reason, st.wait)
		}
	}
	// a ends, having used 100 tokens of the 300 charged: 200 back.
	s = Release(s, l, now, "a", 300, 100)
	if got, want := s.Tok, 1000.0-600+200; got != want {
		t.Fatalf("tokens after release = %v, want %v", got, want)
	}
	s, d := Take(s, l, now, Ask{Lease: "c", LeaseUntil: now + 60*sec, Tokens: 10})
	if d.Granted || d.Reason != ReasonRequests || d.Wait != 500*time.Millisecond {
		t.Fatalf("no request left: %+v, want rate_requests after 500ms (2/s)", d)
	}
	s = Release(s, l, now, "b", 300, 300)
	s, d = Take(s, l, now+sec/2, Ask{Lease: "c", LeaseUntil: now + 60*sec, Tokens: 10})
	if !d.Granted {
		t.Fatalf("after 500ms: %+v, want granted", d)
	}
	// 640 tokens left, 690 half a second later; a request of 900 waits for 210 more at 100/s: 2.1 s.
	s = Release(s, l, now+sec/2, "c", 10, 10)
	s, d = Take(s, l, now+sec, Ask{Lease: "d", Tokens: 900})
	if d.Granted || d.Reason != ReasonTokens || d.Wait != 2100*time.Millisecond {
		t.Fatalf("tokens short: %+v, want rate_tokens after 2.1s", d)
	}
	// A request larger than the bucket goes when the bucket is full.
	s, d = Take(s, l, now+60*sec, Ask{Lease: "e", Tokens: 5000})
	if !d.Granted || s.Tok != 1000-5000 {
		t.Fatalf("large request on a full bucket: %+v tok %v", d, s.Tok)
	}
	// and a correction never leaves more than a bucket of debt.
	s = Release(s, l, now+60*sec, "e", 5000, 9000)
	if s.Tok != -1000 {
		t.Fatalf("debt = %v, want -1000 (minus the capacity)", s.Tok)
	}
}

func TestTakeLapsedLeaseFreesSlot(t *testing.T) {
	l := Limits{Concurrent: 1}
	s, d := Take(State{}, l, 10*sec, Ask{Lease: "dead", LeaseUntil: 15 * sec})
	if !d.Granted {
		t.Fatal(d)
	}
	if _, d = Take(s, l, 14*sec, Ask{Lease: "b", LeaseUntil: 30 * sec}); d.Granted {
		t.Fatal("granted while the lease holds")
	}
	if _, d = Take(s, l, 16*sec, Ask{Lease: "b", LeaseUntil: 30 * sec}); !d.Granted {
		t.Fatalf("the lease of a dead orchestrator lapsed, yet %+v", d)
	}
}

func TestPause(t *testing.T) {
	l := Limits{RPM: 6000}
	s := Pause(State{}, l, 10*sec, 12*sec)
	s = Pause(s, l, 10*sec, 11*sec) // an earlier end does not shorten it
	if _, d := Take(s, l, 11*sec, Ask{}); d.Granted || d.Reason != ReasonPaused || d.Wait != time.Second {
		t.Fatalf("paused: %+v", d)
	}
	if _, d := Take(s, l, 12*sec, Ask{}); !d.Granted {
		t.Fatalf("after the pause: %+v", d)
	}
	// A model without limits is paused all the same.
	if _, d := Take(Pause(State{}, Limits{}, 0, sec), Limits{}, 0, Ask{}); d.Reason != ReasonPaused {
		t.Fatalf("no limits: %+v", d)
	}
}

func TestUrgentHoldsOthersBatch(t *testing.T) {
	l := Limits{RPM: 60, Burst: 1}
	now := 100 * sec
	s, d := Take(State{}, l, now, Ask{Node: "o1", Tokens: 1})
	if !d.Granted {
		t.Fatal(d)
	}
	// o2's interactive call finds no token: it marks itself urgent.
	s, d = Take(s, l, now, Ask{Node: "o2", Urgent: true})
	if d.Granted || !d.Write || s.Urgent["o2"] != now+int64(UrgentTTL) {
		t.Fatalf("urgent denial: %+v %v", d, s.Urgent)
	}
	// A second later a token is back: o1's batch call waits for o2's.
	if _, d = Take(s, l, now+sec, Ask{Node: "o1"}); d.Granted || d.Reason != ReasonQueued {
		t.Fatalf("batch behind urgent: %+v", d)
	}
	s, d = Take(s, l, now+sec, Ask{Node: "o2", Urgent: true})
	if !d.Granted || s.Urgent != nil {
		t.Fatalf("urgent call: %+v, marks %v", d, s.Urgent)
	}
	// A mark of an orchestrator that died lapses.
	s.Urgent = map[string]int64{"dead": now + 2*sec}
	if _, d = Take(s, l, now+3*sec, Ask{Node: "o1"}); !d.Granted {
		t.Fatalf("after a lapsed mark: %+v", d)
	}
}

// TestSkewAddsNothing: a write from a clock ahead leaves At ahead; a
// slower clock refills nothing until it passes At.
func TestSkewAddsNothing(t *testing.T) {
	l := Limits{RPM: 60, Burst: 1}
	s := State{At: 10 * sec, Req: 0}
	s, d := Take(s, l, 9*sec, Ask{})
	if d.Granted || s.At != 10*sec || s.Req != 0 {
		t.Fatalf("clock behind: %+v %+v", d, s)
	}
}

// TestRateOverTime: callers that ask as fast as they may, at every
// millisecond for a minute, get RPM plus the burst, and no second more
// than its share plus the burst.
func TestRateOverTime(t *testing.T) {
	l := Limits{RPM: 600} // 10/s, burst 3
	var s State
	perSec := map[int64]int{}
	total := 0
	for now := int64(0); now < 60*sec; now += int64(time.Millisecond) {
		var d Decision
		s, d = Take(s, l, 1+now, Ask{})
		if d.Granted {
			perSec[now/sec]++
			total++
		}
	}
	if total > 600+3 || total < 590 {
		t.Errorf("granted %d in a minute, want 600 + burst 3 at most", total)
	}
	for sec, n := range perSec {
		if n > 10+3 {
			t.Errorf("second %d: %d granted, want at most 13", sec, n)
		}
	}
}
