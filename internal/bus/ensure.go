package bus

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/agentfleet/agentfleet/internal/retry"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// ensureAttempt bounds one JetStream API call of EnsureStream and
// EnsureKeyValue; ensureTries bounds the calls.
const (
	ensureAttempt = 3 * time.Second
	ensureTries   = 8
)

// EnsureStream makes sure the stream of cfg exists with cfg: it looks it up
// first and creates it only if it is missing, updates it only if its
// configuration differs, and tries again, after a random pause, when a call
// times out or races another creator. Orchestrators that start together on
// a new cluster all ensure the same streams; parallel creates of one
// clustered stream can go unanswered for the client's whole timeout, so
// they are avoided and, when they happen, retried.
func EnsureStream(ctx context.Context, js jetstream.JetStream, cfg jetstream.StreamConfig) (jetstream.Stream, error) {
	var s jetstream.Stream
	err := RetryJS(ctx, func(ctx context.Context) (err error) {
		s, err = ensureStreamOnce(ctx, js, cfg)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("stream %s: %w", cfg.Name, err)
	}
	return s, nil
}

// RetryJS calls fn, each call bounded to a few seconds, until it succeeds,
// fails for good, or has failed a few times for reasons that can pass (a
// timeout, a race with another creator, a cluster without a leader yet),
// with random pauses between the calls (see jsPause). An error that cannot
// pass is returned as fn returned it; otherwise the last error joined with
// ctx's, if ctx ended.
func RetryJS(ctx context.Context, fn func(ctx context.Context) error) error {
	var last, failed error // the last error that may pass; one that cannot
	err := retry.Do(ctx, retry.Policy{MaxAttempts: ensureTries}, func(ctx context.Context, n int) error {
		actx, cancel := context.WithTimeout(ctx, ensureAttempt)
		err := fn(actx)
		cancel()
		if err != nil && !retryable(err) {
			failed = err
			return retry.Permanent(err)
		}
		last = err
		return retry.After(err, jsPause(n, rand.IntN(jsPauseSpread)))
	})
	switch {
	case err == nil:
		return nil
	case failed != nil:
		return failed
	}
	return errors.Join(last, ctx.Err())
}

func ensureStreamOnce(ctx context.Context, js jetstream.JetStream, cfg jetstream.StreamConfig) (jetstream.Stream, error) {
	s, err := js.Stream(ctx, cfg.Name)
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound):
		return js.CreateStream(ctx, cfg)
	case err != nil:
		return nil, err
	case sameStream(s.CachedInfo().Config, cfg):
		return s, nil
	}
	return js.UpdateStream(ctx, cfg)
}

// sameStream reports whether the server's configuration has every setting
// that want sets.
func sameStream(have, want jetstream.StreamConfig) bool {
	if len(have.Subjects) != len(want.Subjects) {
		return false
	}
	for i := range want.Subjects {
		if have.Subjects[i] != want.Subjects[i] {
			return false
		}
	}
	same := have.Description == want.Description && have.Retention == want.Retention && have.Storage == want.Storage &&
		max(have.Replicas, 1) == max(want.Replicas, 1) && have.MaxAge == want.MaxAge && have.Discard == want.Discard &&
		have.AllowDirect == want.AllowDirect && have.AllowMsgTTL == want.AllowMsgTTL
	// A size bound of 0 or less is none (the server says -1): a stream
	// whose bound was lifted is updated too.
	same = same && max(have.MaxBytes, 0) == max(want.MaxBytes, 0)
	if want.Duplicates > 0 {
		same = same && have.Duplicates == want.Duplicates
	}
	same = same && have.NoAck == want.NoAck && sameSources(have.Sources, want.Sources)
	if want.MaxMsgsPerSubject > 0 {
		same = same && have.MaxMsgsPerSubject == want.MaxMsgsPerSubject
	}
	if want.MaxMsgSize > 0 {
		same = same && have.MaxMsgSize == want.MaxMsgSize
	}
	switch {
	case want.SubjectTransform == nil:
		same = same && have.SubjectTransform == nil
	case have.SubjectTransform == nil:
		return false
	default:
		same = same && *have.SubjectTransform == *want.SubjectTransform
	}
	return same
}

// sameSources reports whether two streams source the same streams under
// the same filters and transforms.
func sameSources(have, want []*jetstream.StreamSource) bool {
	if len(have) != len(want) {
		return false
	}
	for i, w := range want {
		h := have[i]
		if h.Name != w.Name || h.FilterSubject != w.FilterSubject || !slices.Equal(h.SubjectTransforms, w.SubjectTransforms) {
			return false
		}
	}
	return true
}

// EnsureKeyValue is EnsureStream for a key-value bucket: looked up first,
// created if missing, updated if its TTL, history or replicas differ.
func EnsureKeyValue(ctx context.Context, js jetstream.JetStream, cfg jetstream.KeyValueConfig) (jetstream.KeyValue, error) {
	var kv jetstream.KeyValue
	err := RetryJS(ctx, func(ctx context.Context) (err error) {
		kv, err = ensureKVOnce(ctx, js, cfg)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("bucket %s: %w", cfg.Bucket, err)
	}
	return kv, nil
}

func ensureKVOnce(ctx context.Context, js jetstream.JetStream, cfg jetstream.KeyValueConfig) (jetstream.KeyValue, error) {
	kv, err := js.KeyValue(ctx, cfg.Bucket)
	switch {
	case errors.Is(err, jetstream.ErrBucketNotFound):
		return js.CreateKeyValue(ctx, cfg)
	case err != nil:
		return nil, err
	}
	st, err := kv.Status(ctx)
	if err != nil {
		return nil, err
	}
	history := max(cfg.History, 1)
	if st.TTL() == cfg.TTL && st.History() == int64(history) && (cfg.Replicas <= 1 || kvReplicas(st) == cfg.Replicas) {
		return kv, nil
	}
	return js.UpdateKeyValue(ctx, cfg)
}

func kvReplicas(st jetstream.KeyValueStatus) int {
	if s, ok := st.(*jetstream.KeyValueBucketStatus); ok {
		return max(s.StreamInfo().Config.Replicas, 1)
	}
	return 0
}

// retryable reports whether an ensure call may succeed if tried again: it
// timed out, or raced another creator or the cluster's leader election.
func retryable(err error) bool {
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		// In use: another creator was first. 503: the cluster has no
		// leader for it yet.
		return apiErr.ErrorCode == jetstream.JSErrCodeStreamNameInUse || apiErr.Code == 503
	}
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrNoResponders) || errors.Is(err, jetstream.ErrNoStreamResponse) ||
		errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) ||
		errors.Is(err, jetstream.ErrBucketExists) || errors.Is(err, jetstream.ErrJetStreamNotEnabled) ||
		errors.Is(err, jetstream.ErrNoHeartbeat) || errors.Is(err, jetstream.ErrStreamNotFound) || errors.Is(err, jetstream.ErrBucketNotFound)
}

// jsPauseSpread is the spread of the even draw of jsPause, in milliseconds.
const jsPauseSpread = 400

// jsPause is the pause after failed JetStream call n (from 1), for an even
// draw u in [0, jsPauseSpread): 100+u ms times n, n capped at 4, so that
// orchestrators that raced do not race again.
func jsPause(n, u int) time.Duration {
	return time.Duration(100+u) * time.Millisecond * time.Duration(min(n, 4))
}
