// Package scripts holds what the fleet's scripted tools need beside their
// sandbox (internal/script) and their transport (internal/bus/scriptfleet):
// the child-process isolation of a script worker (ProcessRunner, and
// RunChildIfRequested for the child), the error reply a child or a dry run
// answers with, and the rules of a script's nested call_tool (CheckNested,
// FleetCaller).
//
// It does not import the NATS client: a script worker's connection is
// internal/bus/scriptfleet's.
package scripts
