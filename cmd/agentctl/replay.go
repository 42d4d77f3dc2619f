package main

// replay re-runs a run's first user message in a fork of its session cut
// before the run, optionally with another model, and compares the two
// runs (diff.go prints them).

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus/client"
	"github.com/agentfleet/agentfleet/internal/bus/timetravel"
	"github.com/agentfleet/agentfleet/internal/rundiff"
	"go.yaml.in/yaml/v3"
)

func checkReplay(m *Main, pos []string) error {
	if len(pos) != 3 {
		return fmt.Errorf("want <agent> <session> <run>, got %d argument(s)", len(pos))
	}
	for i, what := range []string{"agent", "session"} {
		if err := checkName(what, pos[i]); err != nil {
			return err
		}
	}
	if err := checkRunID(pos[2]); err != nil {
		return err
	}
	if m.Into != "" {
		if err := checkName("new session", m.Into); err != nil {
			return fmt.Errorf("--into: %w", err)
		}
		if m.Into == pos[1] {
			return errors.New("--into names the session replayed: a replay goes into a new session")
		}
	}
	if m.Profile != "" {
		if m.Model != "" {
			return errors.New("give --model or --profile, not both")
		}
		data, err := os.ReadFile(m.Profile)
		if err != nil {
			return fmt.Errorf("--profile: %w", err)
		}
		if m.Model, err = replayProfile(data, pos[0]); err != nil {
			return fmt.Errorf("--profile %s: %w", m.Profile, err)
		}
	}
	if err := timetravel.CheckModel(m.Model); err != nil {
		return fmt.Errorf("--model: %w", err)
	}
	return nil
}

// checkRunID checks a run id given as an argument: what a history lists,
// at most 256 bytes without white space.
func checkRunID(id string) error {
	if id == "" || len(id) > 256 || strings.ContainsFunc(id, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		return fmt.Errorf("run id %q is empty, longer than 256 bytes or has white space (agentctl history lists the runs)", id)
	}
	return nil
}

// replayProfile returns the model of a replay's profile file: one agent
// profile (YAML or JSON) of which a replay takes model, and name, which
// must be agent's when given. Every other field is refused: the prompt,
// tools, limits and approvals of a replay are the operator's profile's,
// and the model must be one of its fork_models, which the orchestrator
// checks.
func replayProfile(data []byte, agent string) (string, error) {
	var fields map[string]any
	if err := yaml.Unmarshal(data, &fields); err != nil {
		return "", fmt.Errorf("not a YAML or JSON profile: %w", err)
	}
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if k != "model" && k != "name" {
			return "", fmt.Errorf("field %s: a replay takes only model (and name) from a profile; the prompt, tools and limits are the operator's", k)
		}
	}
	if name, ok := fields["name"]; ok && name != agent {
		return "", fmt.Errorf("the profile is of agent %v, the replay of agent %s", name, agent)
	}
	model, ok := fields["model"].(string)
	if !ok || model == "" {
		return "", errors.New("no model: the profile must set model")
	}
	return model, nil
}

// replayRun forks the session before the run into the new session, with
// the model asked for, asks the new session the run's first user message,
// prints the answer and the two runs side by side.
func (m *Main) replayRun(ctx context.Context) error {
	agent, session, runID := m.pos[0], m.pos[1], m.pos[2]
	src, err := m.loadHistory(ctx, agent, session)
	if err != nil || src == nil {
		return err
	}
	recs := diffRecords(src.Records)
	before, err := rundiff.Extract(session, recs, runID)
	if err != nil {
		return err
	}
	body, err := replayPayload(src.Records, runID)
	if err != nil {
		return err
	}
	into := m.Into
	if into == "" {
		into = replaySession(session)
	}
	f, err := m.requestFork(ctx, agent, session, timetravel.Request{NewSession: into, Point: timetravel.Point{BeforeRun: runID}, Model: m.Model})
	if err != nil {
		return err
	}
	if !m.JSON {
		model := f.Model
		if model == "" {
			model = "the agent's"
		}
		fmt.Fprintf(m.Stdout, "forked %s/%s before run %s into %s (%d records, model %s)\n", agent, session, short(runID), into, f.Records, model)
	}
	final, _, err := m.askFor(ctx, agent, into, body)
	if err != nil || final == nil {
		return err
	}
	after, err := m.loadHistory(ctx, agent, into)
	if err != nil || after == nil {
		return err
	}
	replayed, err := rundiff.Extract(into, diffRecords(after.Records), final.RunID)
	if err != nil {
		return err
	}
	d := rundiff.Compare(before, replayed)
	if m.JSON {
		enc := json.NewEncoder(m.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(struct {
			Forked *timetravel.Forked           `json:"forked"`
			Answer *agentfleet.AssistantMessage `json:"answer"`
			Diff   rundiff.Diff                 `json:"diff"`
		}{f, final, d}); err != nil {
			return err
		}
	} else {
		if text := agentfleet.JoinText(final.Content); text != "" {
			fmt.Fprintln(m.Stdout, text)
		}
		fmt.Fprintln(m.Stdout)
		writeDiff(m.Stdout, &d)
	}
	return m.reportStop(final)
}

// replayPayload is the ask body of a replay: the content of run runID's
// first user message (its text and image blocks) and its priority.
func replayPayload(recs []client.HistoryRecordJSON, runID string) ([]byte, error) {
	for _, r := range recs {
		if r.RunID != runID || r.Kind != "user" {
			continue
		}
		if r.Omitted {
			return nil, fmt.Errorf("the user message of run %s is too large to be read back (%d bytes)", runID, r.Size)
		}
		var u agentfleet.UserMessage
		if err := json.Unmarshal(r.Body, &u); err != nil {
			return nil, fmt.Errorf("the user message of run %s: %w", runID, err)
		}
		var content []agentfleet.Content
		for _, c := range u.Content {
			if c.Type == agentfleet.ContentText || c.Type == agentfleet.ContentImage {
				content = append(content, c)
			}
		}
		if len(content) == 0 {
			return nil, fmt.Errorf("the user message of run %s holds no text or image to send again", runID)
		}
		var b bytes.Buffer
		err := json.NewEncoder(&b).Encode(struct {
			Content  []agentfleet.Content `json:"content"`
			Priority string               `json:"priority,omitempty"`
		}{content, u.Priority})
		return bytes.TrimSpace(b.Bytes()), err
	}
	return nil, fmt.Errorf("run %s has no user message to send again", runID)
}

// replaySession is the default session of a replay of session:
// <session>-replay-<8 hex>, the session cut to keep it a valid name.
func replaySession(session string) string {
	b := make([]byte, 4)
	rand.Read(b)
	const tail = len("-replay-") + 8
	return session[:min(len(session), 128-tail)] + "-replay-" + hex.EncodeToString(b)
}

// diffRecords are the records of a history as rundiff takes them.
func diffRecords(recs []client.HistoryRecordJSON) []rundiff.Record {
	out := make([]rundiff.Record, len(recs))
	for i, r := range recs {
		out[i] = rundiff.Record{RunID: r.RunID, Kind: r.Kind, Body: r.Body, Omitted: r.Omitted, Size: r.Size}
	}
	return out
}
