package wire

import (
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet"
)

// The payloads of the codec benchmarks: a call with about 200 bytes of
// arguments, and its result of about 200 bytes, as the dispatch benchmark
// of cmd/fleetbench sends them.
var (
	benchText    = strings.Repeat("the quick brown fox jumps over the lazy dog ", 5)[:200]
	benchRequest = &CallRequest{
		V: ProtocolVersion, ID: "call_1x2y3z", Tool: "bench_echo", Args: map[string]any{"text": benchText},
		TimeoutMS: 60_000, Attempt: 1, Agent: "bench", Session: "dispatch", RunID: "3f1c2f9e-8a4b-4c1d-9e2f-6b7a8c9d0e1f",
	}
	benchResult = &Frame{T: FrameResult, ID: "call_1x2y3z", Worker: "benchworker/NW7ELMVQ6P4D3GZ5V2RH1K",
		Result: agentfleet.TextResult(benchText)}
	benchAck = &Frame{T: FrameAck, ID: "call_1x2y3z", Worker: "benchworker/NW7ELMVQ6P4D3GZ5V2RH1K",
		Cancel: "agent.worker.NW7ELMVQ6P4D3GZ5V2RH1K.cancel", HeartbeatMS: 1000}
)

func BenchmarkEncodeRequest(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := EncodeRequest(benchRequest); err != nil {
			b.Fatal(err)
		}
	}
}

// The decode benchmarks run the hand-written bounded decoders ("hand") and,
// side by side, the decoders by reflection they replaced ("reflect",
// legacy_codec_test.go).
func BenchmarkDecodeRequest(b *testing.B) {
	data, err := EncodeRequest(benchRequest)
	if err != nil {
		b.Fatal(err)
	}
	for _, impl := range []struct {
		name   string
		decode func([]byte) (*CallRequest, error)
	}{{"hand", DecodeRequest}, {"reflect", legacyDecodeRequest}} {
		b.Run("impl="+impl.name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := impl.decode(data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkEncodeFrame(b *testing.B) {
	for _, bc := range []struct {
		name string
		f    *Frame
	}{{"result", benchResult}, {"ack", benchAck}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := EncodeFrame(bc.f); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkDecodeFrame(b *testing.B) {
	for _, bc := range []struct {
		name string
		f    *Frame
	}{{"result", benchResult}, {"ack", benchAck}} {
		data, err := EncodeFrame(bc.f)
		if err != nil {
			b.Fatal(err)
		}
		for _, impl := range []struct {
			name   string
			decode func([]byte) (*Frame, error)
		}{{"hand", DecodeFrame}, {"reflect", legacyDecodeFrame}} {
			b.Run(bc.name+"/impl="+impl.name, func(b *testing.B) {
				b.SetBytes(int64(len(data)))
				b.ReportAllocs()
				for b.Loop() {
					if _, err := impl.decode(data); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
