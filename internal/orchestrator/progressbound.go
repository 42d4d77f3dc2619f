package orchestrator

import "github.com/agentfleet/agentfleet/internal/pipeline"

// progressShare is the share of the event stream's size that the
// tool.update events of one call may take: a flood of progress from one
// call must not evict the events every observer replays.
const progressShare = 128

// minProgressBytes is the least bound of one call's tool.update events,
// however small the event stream.
const minProgressBytes = 64 << 10

// maxProgressBytes returns the bound of the tool.update events of one call
// for an event stream of eventsMaxBytes (0: its default of 1 GiB):
// 1/progressShare of the stream, at least minProgressBytes and at most
// pipeline.DefaultMaxProgressBytes.
func maxProgressBytes(eventsMaxBytes int64) int64 {
	if eventsMaxBytes <= 0 {
		eventsMaxBytes = 1 << 30
	}
	return min(pipeline.DefaultMaxProgressBytes, max(eventsMaxBytes/progressShare, minProgressBytes))
}
