// Package retention keeps each session's history within its agent's
// bounds (profile field history: max_records, max_bytes, max_age). Past a
// bound, the oldest whole runs of the session are dropped: Cut (cut.go)
// decides which, a pure function of the stored records, and Apply
// (apply.go) has the session's owner store the cut as a retained record
// (history.RecordRetained), fenced like every write of the session, and
// then purge the stream below it. Load leaves out what a retained record
// dropped even before the purge, so a purge that fails or never happens
// changes nothing of what a session sees. A Keeper (keeper.go) is one
// session's: it knows how long its history is (Tally, tally.go) and cuts
// it when a run's end passes a bound; the orchestrator calls it from the
// loop's run end (loop.Trimmer), so that memory drops the same runs.
//
// Its concern is the bounds of one session's history and their cut. It
// imports internal/bus/history for the records, their store and writer,
// and the agentfleet root types; never the orchestrator nor the loop.
package retention
