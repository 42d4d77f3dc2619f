package main

// delete removes a session's records everywhere (agent.delete), for a
// data-protection request.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/agentfleet/agentfleet/internal/bus/erase"
)

func checkDelete(m *Main, pos []string) error {
	if len(pos) != 2 {
		return fmt.Errorf("want <agent> <session>, got %d argument(s)", len(pos))
	}
	if err := checkName("agent", pos[0]); err != nil {
		return err
	}
	return checkName("session", pos[1])
}

// deleteSession asks an orchestrator to delete a session and prints what
// was removed.
func (m *Main) deleteSession(ctx context.Context) error {
	agent, session := m.pos[0], m.pos[1]
	b, err := json.Marshal(erase.Request{Confirm: session})
	if err != nil {
		return err
	}
	data, err := m.conn.Request(ctx, erase.Subject(m.subjects, agent, session), b, m.timeout(60*time.Second))
	if err != nil {
		return err
	}
	var rep erase.Reply
	if err := json.Unmarshal(data, &rep); err != nil {
		return fmt.Errorf("the delete reply is not JSON: %w", err)
	}
	if rep.Error != "" {
		return errors.New(rep.Error)
	}
	if rep.Deleted == nil {
		return errors.New("the delete reply says nothing")
	}
	if m.JSON {
		return json.NewEncoder(m.Stdout).Encode(rep.Deleted)
	}
	d := rep.Deleted
	var parts []string
	for _, stream := range slices.Sorted(maps.Keys(d.Messages)) {
		parts = append(parts, fmt.Sprintf("%s %d", stream, d.Messages[stream]))
	}
	fmt.Fprintf(m.Stdout, "deleted session %s of %s: messages %s; objects %d\n", session, agent, strings.Join(parts, ", "), d.Objects)
	if len(d.Stopped) > 0 {
		fmt.Fprintf(m.Stdout, "stopped on %s\n", strings.Join(d.Stopped, ", "))
	}
	if len(d.Unanswered) > 0 {
		fmt.Fprintf(m.Stdout, "no answer from %s (the store fences them)\n", strings.Join(d.Unanswered, ", "))
	}
	return nil
}
