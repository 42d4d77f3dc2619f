// Package builtin holds the tools that tool workers serve out of the box:
// get_time, calculator, sleep, echo, http_fetch and get_weather.
//
// Each tool is built by a constructor that returns an *agentfleet.Tool with a
// full definition and an in-process handler. All builds every tool from one
// Options value; Select picks some of them by name.
//
// Handlers return a Go error for every failure meant for the model; the
// pipeline turns it into an error result carrying its text, so the texts say
// what went wrong and where, prefixed with the tool's name.
package builtin

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/agentfleet/agentfleet"
)

// Options configures the built-in tools. The zero value gives every tool its
// documented default.
type Options struct {
	// AllowPrivate lets http_fetch connect to loopback, private, link-local
	// and other non-public addresses. Optional; default false, which refuses
	// them (see HTTPFetch).
	AllowPrivate bool

	// WeatherURL is the base URL of an Open-Meteo-compatible forecast API.
	// Optional; default DefaultWeatherURL.
	WeatherURL string
	// GeocodingURL is the base URL of an Open-Meteo-compatible geocoding
	// API. Optional; default WeatherURL when that is set, otherwise
	// DefaultGeocodingURL.
	GeocodingURL string
	// HTTPClient makes get_weather's requests. Optional; default a client
	// with a 10 s timeout. http_fetch never uses it: it always dials
	// through its own transport, so that its address rules cannot be
	// bypassed by a proxy or a custom dialer.
	HTTPClient *http.Client

	// Now is get_time's clock. Optional; default time.Now.
	Now func() time.Time
	// SleepTick is the interval between sleep's progress reports.
	// Optional; default 100 ms.
	SleepTick time.Duration
}

// All returns every built-in tool, configured by opts, in a stable order:
// get_time, calculator, sleep, echo, http_fetch, get_weather. Each call
// returns new Tool values, which the caller may modify.
func All(opts Options) []*agentfleet.Tool {
	return []*agentfleet.Tool{
		GetTime(opts.Now),
		Calculator(),
		Sleep(opts.SleepTick),
		Echo(),
		HTTPFetch(opts),
		Weather(opts),
	}
}

// Select returns the tools of all named by names, in the order of names;
// a name given twice is returned once. It fails on the first name that no
// tool of all has, listing the names it has. Empty names yield no tools.
func Select(all []*agentfleet.Tool, names []string) ([]*agentfleet.Tool, error) {
	byName := make(map[string]*agentfleet.Tool, len(all))
	for _, t := range all {
		byName[t.Name] = t
	}
	var picked []*agentfleet.Tool
	seen := make(map[string]bool, len(names))
	for _, name := range names {
		t, ok := byName[name]
		if !ok {
			have := make([]string, len(all))
			for i, t := range all {
				have[i] = t.Name
			}
			return nil, fmt.Errorf("builtin: unknown tool %q (have: %s)", name, strings.Join(have, ", "))
		}
		if seen[name] {
			continue
		}
		seen[name] = true
		picked = append(picked, t)
	}
	return picked, nil
}
