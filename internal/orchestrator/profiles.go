package orchestrator

import "github.com/agentfleet/agentfleet/internal/profile"

// Profile is one agent's profile (package profile).
type Profile = profile.Profile

// LoadProfiles reads agent profiles from a YAML or JSON file.
func LoadProfiles(file string) ([]Profile, error) { return profile.Load(file) }

// ParseProfiles parses agent profiles from YAML or JSON.
func ParseProfiles(data []byte) ([]Profile, error) { return profile.Parse(data) }

// DefaultProfile is the one profile of an orchestrator started without a
// config file: every tool, parallel execution.
func DefaultProfile() Profile { return profile.Default() }
