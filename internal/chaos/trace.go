package chaos

import (
	"crypto/sha256"
	"encoding/hex"
)

// Every message of the load carries a W3C traceparent derived from its id,
// so that a run traced by an orchestrator (Config.TraceEndpoint) can be
// matched with the message it took, whichever orchestrator took it.

// TraceContextOf returns the trace id and the span id, in hex, of the
// traceparent that the load sends message id with (sampled).
func TraceContextOf(id string) (traceID, spanID string) {
	h := sha256.Sum256([]byte(id))
	return hex.EncodeToString(h[:16]), hex.EncodeToString(h[16:24])
}

func traceparentOf(id string) string {
	t, s := TraceContextOf(id)
	return "00-" + t + "-" + s + "-01"
}
