// Package timetravel goes back in a session's history: it forks a session
// at a point of its stored records into a new session (Fork), and answers
// the public fork subject, <prefix>.fork.<agent>.<session>, with it
// (Serve). A fork only reads the source session, so it needs nothing of the
// source's owner and may run while that owner is down; it writes the new
// session with history's conditional appends, the first one expecting the
// new session to hold nothing, so a fork into a session that exists, or
// that someone else writes meanwhile, is refused at the server.
//
// It imports the NATS client, internal/bus, internal/bus/guarded (the
// runner of its subject), internal/bus/history and internal/bus/ownership;
// never the orchestrator nor the agent core.
package timetravel
