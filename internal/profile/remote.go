package profile

import (
	"fmt"
	"net/url"
	"slices"

	"github.com/agentfleet/agentfleet/internal/bus"
)

// RemoteAgent is an agent of another system that a profile may ask over
// A2A: its tool is ask_<Name>.
type RemoteAgent struct {
	// Name names the tool, ask_<Name>: letters, digits, '-' and '_'.
	Name string `yaml:"name" json:"name"`
	// URL is the agent's A2A JSON-RPC endpoint (its Agent Card's url),
	// http or https.
	URL string `yaml:"url" json:"url"`
	// Auth is how requests authenticate; none by default.
	Auth RemoteAuth `yaml:"auth" json:"auth"`
}

// RemoteAuth gives the bearer token of a remote agent's requests
// (Authorization: Bearer <token>), from the environment or a file, never
// in the profile itself; at most one of them.
type RemoteAuth struct {
	// TokenEnv names the environment variable that holds the token.
	TokenEnv string `yaml:"token_env" json:"token_env"`
	// TokenFile is a file that holds the token.
	TokenFile string `yaml:"token_file" json:"token_file"`
}

// checkRemote validates the remote agents: names that are tokens, listed
// once, none also a local agent of agents: (both would be ask_<name>),
// http or https URLs, at most one token source.
func (p *Profile) checkRemote() error {
	seen := map[string]bool{}
	for i, r := range p.RemoteAgents {
		where := fmt.Sprintf("agent %q: remote_agents entry %d", p.Name, i+1)
		if err := bus.CheckToken("remote agent", r.Name); err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
		if seen[r.Name] || slices.Contains(p.Agents, r.Name) {
			return fmt.Errorf("%s: %q is listed twice (in agents or remote_agents): its tool ask_%s would be two", where, r.Name, r.Name)
		}
		seen[r.Name] = true
		u, err := url.Parse(r.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("%s (%s): url %q is not an http or https URL", where, r.Name, r.URL)
		}
		if r.Auth.TokenEnv != "" && r.Auth.TokenFile != "" {
			return fmt.Errorf("%s (%s): auth gives both token_env and token_file: give one", where, r.Name)
		}
	}
	return nil
}
