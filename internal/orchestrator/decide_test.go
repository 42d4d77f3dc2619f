package orchestrator

import "testing"

func TestDecide(t *testing.T) {
	tests := []struct {
		name  string
		known Known
		in    Arrival
		want  Decision
	}{
		{"new message", Known{}, Arrival{Seq: 7}, Decision{Action: Queue}},
		{"new ask", Known{}, Arrival{Ask: true}, Decision{Action: Queue}},
		{"input behind an interrupted run", Known{}, Arrival{Seq: 9}, Decision{Action: Queue}},
		{"read from the stream at load", Known{}, Arrival{Seq: 9, Scanned: true}, Decision{Action: Queue}},
		{"redelivery while queued", Known{Seen: true, Seq: 7}, Arrival{Seq: 7}, Decision{Action: Attach}},
		{"another copy while queued", Known{Seen: true, Seq: 7}, Arrival{Seq: 8}, Decision{Action: Attach}},
		{"redelivery of the run in progress", Known{Seen: true, RunID: "r1", Seq: 7}, Arrival{Seq: 7}, Decision{Action: Attach}},
		{"redelivery of an interrupted run", Known{Seen: true, RunID: "r1"}, Arrival{Seq: 7}, Decision{Action: Attach}},
		{"retried ask while its run goes on", Known{Seen: true, RunID: "r1"}, Arrival{Ask: true}, Decision{Action: Attach}},
		{"redelivery of an ended run", Known{Seen: true, RunID: "r1", Ended: true, Seq: 7}, Arrival{Seq: 7}, Decision{Action: Answered}},
		{"redelivery of an ended run after a restart", Known{Seen: true, RunID: "r1", Ended: true}, Arrival{Seq: 7}, Decision{Action: Answered}},
		{"duplicate of an ended run", Known{Seen: true, RunID: "r1", Ended: true, Seq: 7}, Arrival{Seq: 12}, Decision{Action: Answered, Replay: true}},
		{"retried ask of an ended run", Known{Seen: true, RunID: "r1", Ended: true}, Arrival{Ask: true}, Decision{Action: Answered}},
		{"ended run read from the stream", Known{Seen: true, RunID: "r1", Ended: true, Seq: 7}, Arrival{Seq: 12, Scanned: true}, Decision{Action: Answered}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Decide(tt.known, tt.in); got != tt.want {
				t.Errorf("Decide(%+v, %+v) = %v replay=%v, want %v replay=%v", tt.known, tt.in, got.Action, got.Replay, tt.want.Action, tt.want.Replay)
			}
		})
	}
}
