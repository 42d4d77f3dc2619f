package chaos

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/chaos/check"
	"github.com/agentfleet/agentfleet/internal/chaos/proc"
)

// interrupted returns the runs (session, run) of the sessions of parts that
// writer stored records of but did not end.
func interrupted(recs []*check.Record, writer string, parts []int) [][2]string {
	type key = [2]string
	wrote, ended := map[key]bool{}, map[key]bool{}
	var order []key
	for _, r := range recs {
		if r.Writer != writer || !slices.Contains(parts, bus.Partition(agentName, r.Session)) {
			continue
		}
		k := key{r.Session, r.Run}
		if !wrote[k] {
			wrote[k] = true
			order = append(order, k)
		}
		if r.End {
			ended[k] = true
		}
	}
	return slices.DeleteFunc(order, func(k key) bool { return ended[k] })
}

// inFlightAt counts the runs of the sessions of parts that from stored
// records of before t and that had not ended by t, and those of them that
// to ended.
func inFlightAt(recs []*check.Record, from, to string, parts []int, t time.Time) (inflight, handed int) {
	type key = [2]string
	began := map[key]bool{}
	for _, r := range recs {
		k := key{r.Session, r.Run}
		if r.Writer == from && r.Time.Before(t) && slices.Contains(parts, bus.Partition(agentName, r.Session)) {
			began[k] = true
		}
	}
	ended := map[key]*check.Record{}
	for _, r := range recs {
		if k := (key{r.Session, r.Run}); began[k] && r.End && ended[k] == nil {
			ended[k] = r
		}
	}
	for k := range began {
		if e := ended[k]; e == nil || !e.Time.Before(t) {
			inflight++
			if e != nil && e.Writer == to {
				handed++
			}
		}
	}
	return inflight, handed
}

// endOf returns when the run of message id of session ended, as stored.
func endOf(recs []*check.Record, session, id string) (time.Time, bool) {
	run := ""
	for _, r := range recs {
		if r.Session != session {
			continue
		}
		if u, ok := r.Msg.(*agentfleet.UserMessage); ok && u.ID == id && run == "" {
			run = r.Run
		}
		if run != "" && r.Run == run && r.End {
			return r.Time, true
		}
	}
	return time.Time{}, false
}

// writtenAfter fails the report for every record writer stored later than
// writeMargin after its process was gone.
func writtenAfter(rep *ScaleReport, recs []*check.Record, writer, name string, gone time.Time) {
	n := 0
	var first *check.Record
	for _, r := range recs {
		if r.Writer == writer && r.Time.After(gone.Add(writeMargin)) {
			if n++; first == nil {
				first = r
			}
		}
	}
	if n > 0 {
		rep.fail("%d history records written by %s (%s) after it was gone; first: %s seq %d run %s at +%v",
			n, name, check.Short(writer), first.Session, first.Seq, check.Short(first.Run), first.Time.Sub(gone))
	}
}

// countsOf returns m's values for ids, in order.
func countsOf(m map[string]int, ids []string) []int {
	c := make([]int, len(ids))
	for i, id := range ids {
		c[i] = m[id]
	}
	return c
}

// orchID returns the id the running orchestrator p gave in its "orchestrator
// serving" line.
func orchID(p *proc.Proc) (string, error) {
	b, err := os.ReadFile(p.Log)
	if err != nil {
		return "", fmt.Errorf("chaos: %s id: %w", p.Name, err)
	}
	id := ""
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "=== "+p.Name+" start") {
			id = ""
		}
		if !strings.Contains(line, p.Marker) {
			continue
		}
		if _, rest, ok := strings.Cut(line, " id="); ok {
			id, _, _ = strings.Cut(rest, " ")
		}
	}
	if id == "" {
		return "", fmt.Errorf("chaos: %s: no id in its %q line", p.Name, p.Marker)
	}
	return id, nil
}
