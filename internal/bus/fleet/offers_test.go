package fleet

import (
	"slices"
	"testing"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/bus"
	"github.com/agentfleet/agentfleet/internal/bus/slots"
	"github.com/nats-io/nats.go/micro"
)

// TestDirectOffers: only a worker whose metadata says direct "true" (not
// "yes", "1" or "TRUE"), declares a concurrency and has an id that is one
// subject token (not "I.>", which would aim its subject elsewhere) is
// offered to the client's choice, and only for the tools it is not
// refused for (a lower kind's claim on a built-in tool's name is no offer).
func TestDirectOffers(t *testing.T) {
	subjects, _ := bus.NewSubjects("")
	info := func(id, kind, direct, concurrency string, tools ...string) *micro.Info {
		in := &micro.Info{ServiceIdentity: micro.ServiceIdentity{Name: "w", ID: id, Version: "1.0.0", Metadata: map[string]string{
			MetaProtocol: "1", "prefix": "agent", MetaKind: kind, MetaDirect: direct, MetaConcurrency: concurrency,
		}}}
		for _, name := range tools {
			in.Endpoints = append(in.Endpoints, micro.EndpointInfo{Name: name, Subject: "agent.tool." + name, Metadata: ToolMetadata(&agentfleet.ToolDef{Name: name})})
		}
		return in
	}
	members := map[string]*member{}
	for _, in := range []*micro.Info{
		info("A", KindBuiltin, "true", "8", "echo", "sleep"),
		info("B", KindBuiltin, "true", "4", "echo"),
		info("C", KindBuiltin, "yes", "8", "echo"),
		info("D", KindBuiltin, "TRUE", "8", "echo"),
		info("E", KindBuiltin, "1", "8", "echo"),
		info("F", KindBuiltin, "true", "none", "echo"),
		info("G", KindBuiltin, "true", "-3", "echo"),
		info("H", KindForeign, "true", "1000000", "echo", "rogue"),
		info("I.>", KindBuiltin, "true", "8", "echo"),
		info("J*", KindBuiltin, "true", "8", "echo"),
	} {
		m, _ := memberFromInfo(in, subjects)
		members[m.id] = m
	}
	tools, _ := resolve(members)
	got := directOffers(members, tools)
	want := map[string][]slots.Offer{
		"echo":  {{ID: "A", Limit: 8}, {ID: "B", Limit: 4}},
		"sleep": {{ID: "A", Limit: 8}},
		"rogue": {{ID: "H", Limit: 1000000}}, // its own tool; Choose bounds the claim
	}
	for name, w := range want {
		if !slices.Equal(got[name], w) {
			t.Errorf("offers of %s = %v, want %v", name, got[name], w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("offers = %v, want %v", got, want)
	}
}
