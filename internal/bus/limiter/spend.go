package limiter

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// The fleet's spend per agent and UTC day is one key of the quota bucket,
// "s.<agent>.<yyyymmdd>", holding the dollars as decimal text, added to
// with compare-and-set after each priced call.

// spent is an agent's spend as last read, and when.
type spent struct {
	day  string
	usd  float64
	read time.Time
}

// SpendCacheTTL is how long AgentSpend answers from what it last read.
const SpendCacheTTL = time.Second

// spendKey returns the key of agent's spend on day.
func spendKey(agent, day string) string { return "s." + keyToken(agent) + "." + day }

func today(now time.Time) string { return now.UTC().Format("20060102") }

// AddSpend adds usd to agent's spend today, fleet-wide. It does not
// block: the write goes on in the background.
func (l *Limiter) AddSpend(agent string, usd float64) {
	if usd <= 0 || agent == "" {
		return
	}
	now := time.Now()
	key := spendKey(agent, today(now))
	l.spendMu.Lock()
	if c, ok := l.spend[agent]; ok && c.day == today(now) {
		c.usd += usd
		l.spend[agent] = c
	}
	l.spendMu.Unlock()
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		ctx, cancel := context.WithTimeout(l.ctx, 5*time.Second)
		defer cancel()
		if err := l.addFloat(ctx, key, usd); err != nil && l.ctx.Err() == nil {
			l.log.Warn("model quota: spend not recorded", "agent", agent, "usd", usd, "err", err)
		}
	}()
}

// AgentSpend returns agent's spend today across the fleet, as read at most
// SpendCacheTTL ago (plus what this orchestrator added since); 0 when it
// cannot be read.
func (l *Limiter) AgentSpend(agent string) float64 {
	now := time.Now()
	day := today(now)
	l.spendMu.Lock()
	c, ok := l.spend[agent]
	l.spendMu.Unlock()
	if ok && c.day == day && now.Sub(c.read) < SpendCacheTTL {
		return c.usd
	}
	ctx, cancel := context.WithTimeout(l.ctx, 5*time.Second)
	defer cancel()
	usd := 0.0
	e, err := l.store().Get(ctx, spendKey(agent, day))
	switch {
	case err == nil:
		usd, _ = strconv.ParseFloat(string(e.Value()), 64)
		if !(usd >= 0) { // NaN or negative: written by something else
			usd = 0
		}
	case errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted):
	default:
		return c.usd
	}
	l.spendMu.Lock()
	l.spend[agent] = spent{day: day, usd: usd, read: now}
	l.spendMu.Unlock()
	return usd
}

// addFloat adds f to the decimal number of key, with compare-and-set.
func (l *Limiter) addFloat(ctx context.Context, key string, f float64) error {
	for try := 0; try < 1000; try++ {
		kv := l.store()
		var (
			v   float64
			rev uint64
		)
		e, err := kv.Get(ctx, key)
		switch {
		case err == nil:
			rev = e.Revision()
			v, _ = strconv.ParseFloat(string(e.Value()), 64)
			if !(v >= 0) {
				v = 0
			}
		case errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted):
		default:
			return err
		}
		b := strconv.AppendFloat(nil, v+f, 'g', -1, 64)
		if rev == 0 {
			_, err = kv.Create(ctx, key, b)
		} else {
			_, err = kv.Update(ctx, key, b, rev)
		}
		if err == nil || !(errors.Is(err, jetstream.ErrKeyExists) || errors.Is(err, jetstream.ErrKeyRevisionMismatch) || isWrongSequence(err)) {
			return err
		}
	}
	return errors.New("limiter: spend: compare-and-set lost too often")
}
