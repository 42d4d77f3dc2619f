package fleet

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/nats-io/nats.go/micro"
)

// member is one worker of the fleet as the orchestrator knows it: what its
// $SRV.INFO said, and when it was last heard from.
type member struct {
	id, service, version string
	// kind is the service's MetaKind, KindForeign when it says none.
	kind string
	// concurrency is what the worker advertises (MetaConcurrency); 0 when
	// it advertises none.
	concurrency int
	// direct: it takes calls on its own subjects too (MetaDirect).
	direct bool
	tools  map[string]agentfleet.ToolDef
	// seen is when the worker last sent a beat, an announcement or an
	// info answer; beat is the interval it beats at, 0 for a worker that
	// does not beat (it is kept alive by discovery rounds instead).
	seen time.Time
	beat time.Duration
}

// clampBeat keeps a beat interval a worker announces within [MinBeat,
// MaxBeat], so that it can neither flood nor switch its loss detection off.
func clampBeat(d time.Duration) time.Duration { return min(max(d, MinBeat), MaxBeat) }

// skippedEndpoint is an endpoint of a worker of this fleet that does not
// describe a tool the fleet can use, and why.
type skippedEndpoint struct {
	worker, endpoint string
	err              error
}

// memberFromInfo reads a $SRV.INFO answer. It returns nil for a service that
// is not a worker of this fleet (no protocol metadata, another prefix), and
// the endpoints it skipped, each with the reason.
func memberFromInfo(info *micro.Info, subjects bus.Subjects) (*member, []skippedEndpoint) {
	if info.Metadata[MetaProtocol] == "" || info.Metadata["prefix"] != subjects.Prefix {
		return nil, nil
	}
	m := &member{id: info.ID, service: info.Name, version: info.Version, kind: info.Metadata[MetaKind], tools: map[string]agentfleet.ToolDef{}}
	if m.kind == "" {
		m.kind = KindForeign
	}
	if c, err := strconv.Atoi(info.Metadata[MetaConcurrency]); err == nil && c > 0 {
		m.concurrency = c
	}
	m.direct = info.Metadata[MetaDirect] == "true"
	if ms, err := strconv.ParseInt(info.Metadata[MetaBeat], 10, 64); err == nil && ms > 0 {
		m.beat = clampBeat(time.Duration(ms) * time.Millisecond)
	}
	var (
		skipped []skippedEndpoint
		over    []string // endpoints past MaxWorkerTools
	)
	for _, ep := range info.Endpoints {
		name, ok := strings.CutPrefix(ep.Subject, subjects.Prefix+".tool.")
		switch {
		case !ok:
			skipped = append(skipped, skippedEndpoint{info.ID, ep.Name, fmt.Errorf("subject %q is not under %s.tool.", ep.Subject, subjects.Prefix)})
			continue
		case name != ep.Name:
			skipped = append(skipped, skippedEndpoint{info.ID, ep.Name, fmt.Errorf("endpoint name %q differs from the tool of its subject %q", ep.Name, ep.Subject)})
			continue
		}
		if len(m.tools) >= MaxWorkerTools {
			over = append(over, ep.Name)
			continue
		}
		def, err := ToolFromMetadata(name, ep.Metadata)
		if err == nil {
			err = ToolBounds{}.Check(&def)
		}
		if err != nil {
			skipped = append(skipped, skippedEndpoint{info.ID, ep.Name, err})
			continue
		}
		m.tools[name] = def
	}
	if len(over) > 0 {
		// One report for them all: a worker of a million endpoints must not
		// write a million log lines.
		skipped = append(skipped, skippedEndpoint{info.ID, over[0], &BoundError{Tool: fmt.Sprintf("%s and %d after it", over[0], len(over)-1), Bound: "tool count", Limit: MaxWorkerTools}})
	}
	return m, skipped
}

// conflict is a tool name served by workers that disagree: of different
// kinds (the lower is refused: its workers are not counted as serving the
// tool), or of different services with different definitions (one is
// offered, as resolve says; both are still called).
type conflict struct {
	tool, kept, other string
	refused           bool
}

// key identifies a conflict, to log it once.
func (c conflict) key() string {
	return fmt.Sprintf("%s\x00%s\x00%s\x00%v", c.tool, c.kept, c.other, c.refused)
}

// describe names a worker in a log line: service/id (kind).
func (m *member) describe() string { return m.service + "/" + m.id + " (" + m.kind + ")" }

// resolve computes the fleet's tools from its members. A tool name is
// offered as served by the workers of the highest kind that serve it
// (Rank): a built-in or scripted tool's name cannot be taken by an MCP
// server's bridge or a foreign worker, whose offers are refused and
// reported as conflicts. A tool served by several workers of that kind
// with different definitions (a rolling upgrade) takes the definition of
// the worker whose service version is newest; between equal versions, the
// one served by more workers, then the smallest worker id, so that every
// orchestrator chooses the same one, every time. Definitions that differ
// between differently named services are reported too.
func resolve(members map[string]*member) (map[string]*FleetTool, []conflict) {
	type offer struct {
		m   *member
		def agentfleet.ToolDef
	}
	offers := map[string][]offer{}
	for _, m := range members {
		for name, def := range m.tools {
			offers[name] = append(offers[name], offer{m, def})
		}
	}
	out := make(map[string]*FleetTool, len(offers))
	var conflicts []conflict
	for _, name := range slices.Sorted(maps.Keys(offers)) {
		all := offers[name]
		top := 0
		for _, o := range all {
			top = max(top, Rank(o.m.kind))
		}
		var os, refused []offer
		for _, o := range all {
			if Rank(o.m.kind) == top {
				os = append(os, o)
			} else {
				refused = append(refused, o)
			}
		}
		count := map[string]int{}
		for _, o := range os {
			count[defKey(o.def)]++
		}
		best := slices.MaxFunc(os, func(a, b offer) int {
			if c := compareVersions(a.m.version, b.m.version); c != 0 {
				return c
			}
			if c := cmp.Compare(count[defKey(a.def)], count[defKey(b.def)]); c != 0 {
				return c
			}
			return cmp.Compare(b.m.id, a.m.id) // the smaller id wins
		})
		for _, o := range refused {
			conflicts = append(conflicts, conflict{tool: name, kept: best.m.describe(), other: o.m.describe(), refused: true})
		}
		for _, o := range os {
			if o.m.service != best.m.service && defKey(o.def) != defKey(best.def) {
				conflicts = append(conflicts, conflict{tool: name, kept: best.m.describe(), other: o.m.describe()})
			}
		}
		t := &FleetTool{ToolDef: best.def, Concurrency: 0}
		unknown := false
		for _, o := range os {
			t.Workers = append(t.Workers, o.m.id)
			if o.m.concurrency == 0 {
				unknown = true
			}
			t.Concurrency += o.m.concurrency
		}
		if unknown {
			t.Concurrency = 0
		}
		slices.Sort(t.Workers)
		out[name] = t
	}
	slices.SortFunc(conflicts, func(a, b conflict) int { return strings.Compare(a.key(), b.key()) })
	return out, conflicts
}

// defKey identifies a definition.
func defKey(d agentfleet.ToolDef) string {
	return fmt.Sprintf("%s\x00%s\x00%s\x00%s\x00%+v\x00%v\x00%d\x00%v", d.Label, d.Description, d.InputSchema, d.OutputSchema, d.Annotations, d.Parallel, d.TimeoutMS, d.Scripted)
}

// compareVersions compares two SemVer versions by major, minor and patch
// (numerically), then a release above a pre-release, then as strings.
func compareVersions(a, b string) int {
	pa, prea := splitVersion(a)
	pb, preb := splitVersion(b)
	for i := range 3 {
		if c := cmp.Compare(pa[i], pb[i]); c != 0 {
			return c
		}
	}
	switch {
	case prea == "" && preb != "":
		return 1
	case prea != "" && preb == "":
		return -1
	}
	return cmp.Compare(prea, preb)
}

func splitVersion(v string) ([3]int, string) {
	v = strings.TrimPrefix(v, "v")
	v, _, _ = strings.Cut(v, "+")
	core, pre, _ := strings.Cut(v, "-")
	var out [3]int
	for i, p := range strings.SplitN(core, ".", 3) {
		n, _ := strconv.Atoi(p)
		out[i] = n
	}
	return out, pre
}

// chosenVersions returns, for each tool served by workers of more than one
// version, the version whose definition resolve chose; for logs.
func chosenVersions(members map[string]*member, tools map[string]*FleetTool) map[string]string {
	out := map[string]string{}
	for name, t := range tools {
		versions := map[string]bool{}
		chosen := ""
		for _, id := range t.Workers {
			m := members[id]
			versions[m.version] = true
			if defKey(m.tools[name]) == defKey(t.ToolDef) && (chosen == "" || compareVersions(m.version, chosen) > 0) {
				chosen = m.version
			}
		}
		if len(versions) > 1 {
			out[name] = chosen + " of " + strings.Join(slices.Sorted(maps.Keys(versions)), ", ")
		}
	}
	return out
}
