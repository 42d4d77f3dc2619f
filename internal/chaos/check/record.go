package check

import (
	"time"

	"github.com/agentfleet/agentfleet"
)

// Record is one stored history record.
type Record struct {
	// Seq and Time are the record's stream sequence and timestamp.
	Seq  uint64
	Time time.Time
	// Session, Run and Writer are its session, its run id and the
	// Agentfleet-Writer that stored it (empty when none did).
	Session string
	Run     string
	Writer  string
	// End says the record is a run end.
	End bool
	// Msg is the stored message, nil for a run end.
	Msg agentfleet.Message
	// Final is a run end's final message.
	Final *agentfleet.AssistantMessage
	// Cut, on a retained record (retention), is the first stream
	// sequence the session's history keeps: loads leave out what is
	// stored before it. 0 on every other record.
	Cut uint64
	// Bad says why the record did not decode, empty when it did.
	Bad string
}

// LedgerRecord is one stored execution of the ledger tool.
type LedgerRecord struct {
	// Seq is its sequence in the ledger stream; Call the id of the tool
	// call it executed; Arg its argument.
	Seq  uint64
	Call string
	Arg  string
	// Partition, Epoch and Owner are the fence the call came with (the
	// worker's Agentfleet-Fence); Epoch is 0 when it came with none.
	Partition int
	Epoch     uint64
	Owner     string
}
