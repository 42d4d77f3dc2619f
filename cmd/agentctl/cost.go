package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus/history"
	"github.com/nats-io/nats.go/jetstream"
)

// costRow is the cost of one session's runs (or of all the runs of an
// agent, Session "").
type costRow struct {
	Agent   string  `json:"agent"`
	Session string  `json:"session,omitempty"`
	Runs    int     `json:"runs"`
	Tokens  int     `json:"tokens"`
	USD     float64 `json:"usd"`
}

// costReport is what `agentctl cost` prints: the sessions, the agents and
// the total.
type costReport struct {
	Since    *time.Time `json:"since,omitempty"`
	Sessions []costRow  `json:"sessions"`
	Agents   []costRow  `json:"agents"`
	Total    costRow    `json:"total"`
}

// sumCosts adds up the cost and tokens of the stored run ends, by
// session and by agent, sorted by agent then session.
func sumCosts(ends []history.RunEnd) costReport {
	sessions, agents := map[[2]string]*costRow{}, map[string]*costRow{}
	var total costRow
	for _, e := range ends {
		u := e.Final.Usage
		tokens := 0
		if u != nil {
			tokens = u.InputTokens + u.OutputTokens
			if tokens == 0 {
				tokens = u.TotalTokens
			}
		}
		usd := agentfleet.CostOf(u)
		for _, r := range []*costRow{
			row(sessions, [2]string{e.Agent, e.Session}),
			rowOf(agents, e.Agent),
			&total,
		} {
			r.Runs++
			r.Tokens += tokens
			r.USD += usd
		}
	}
	rep := costReport{Total: total, Sessions: []costRow{}, Agents: []costRow{}}
	for _, r := range sessions {
		rep.Sessions = append(rep.Sessions, *r)
	}
	for _, r := range agents {
		rep.Agents = append(rep.Agents, *r)
	}
	by := func(a, b costRow) int {
		return cmp.Or(cmp.Compare(a.Agent, b.Agent), cmp.Compare(a.Session, b.Session))
	}
	slices.SortFunc(rep.Sessions, by)
	slices.SortFunc(rep.Agents, by)
	return rep
}

func row(m map[[2]string]*costRow, k [2]string) *costRow {
	if m[k] == nil {
		m[k] = &costRow{Agent: k[0], Session: k[1]}
	}
	return m[k]
}

func rowOf(m map[string]*costRow, agent string) *costRow {
	if m[agent] == nil {
		m[agent] = &costRow{Agent: agent}
	}
	return m[agent]
}

func checkCost(m *Main, pos []string) error {
	if len(pos) > 1 {
		return fmt.Errorf("want [agent], got %d arguments", len(pos))
	}
	if m.Since < 0 {
		return fmt.Errorf("--since %v is negative", m.Since)
	}
	if len(pos) == 1 {
		return checkName("agent", pos[0])
	}
	return nil
}

// cost sums what the stored runs cost, from the history stream: per
// session, per agent and in all, for the agent given (default every
// agent) and the runs stored within --since (default all).
func (m *Main) cost(ctx context.Context) error {
	ctx, cancel := m.conn.UntilDenied(ctx)
	defer cancel()
	agent := ""
	if len(m.pos) > 0 {
		agent = m.pos[0]
	}
	var since time.Time
	if m.Since > 0 {
		since = time.Now().Add(-m.Since)
	}
	js, err := jetstream.New(m.conn.NATS())
	if err != nil {
		return err
	}
	ends, skipped, err := history.RunEnds(ctx, js, m.subjects, agent, since)
	if cause := context.Cause(ctx); err != nil && cause != nil && !errors.Is(cause, context.Canceled) {
		return cause
	}
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return fmt.Errorf("no history stream %s: costs are stored with the runs of a durable orchestrator", history.StreamName(m.subjects))
	}
	if err != nil {
		return err
	}
	for _, s := range skipped {
		fmt.Fprintf(m.Stderr, "skipped a stored record: %v\n", s.Err)
	}
	rep := sumCosts(ends)
	if !since.IsZero() {
		rep.Since = &since
	}
	if m.JSON {
		enc := json.NewEncoder(m.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	tw := tabwriter.NewWriter(m.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "AGENT\tSESSION\tRUNS\tTOKENS\tUSD")
	for _, r := range rep.Sessions {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\n", r.Agent, r.Session, r.Runs, r.Tokens, usd(r.USD))
	}
	for _, r := range rep.Agents {
		fmt.Fprintf(tw, "%s\t(all)\t%d\t%d\t%s\n", r.Agent, r.Runs, r.Tokens, usd(r.USD))
	}
	fmt.Fprintf(tw, "total\t\t%d\t%d\t%s\n", rep.Total.Runs, rep.Total.Tokens, usd(rep.Total.USD))
	return tw.Flush()
}

// usd writes dollars with six decimals, enough for a single small call.
func usd(f float64) string { return "$" + strconv.FormatFloat(f, 'f', 6, 64) }
