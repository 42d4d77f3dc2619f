package cost_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/agentfleet/agentfleet"
	"github.com/agentfleet/agentfleet/internal/cost"
)

// near compares dollars to a billionth of a cent.
func near(a, b float64) bool { return math.Abs(a-b) < 1e-11 }

// TestOf prices usages by hand: each want is worked out in the comment.
func TestOf(t *testing.T) {
	mini := cost.Price{Input: 0.15, CachedInput: 0.075, Output: 0.60}
	tests := []struct {
		name  string
		price cost.Price
		usage *agentfleet.Usage
		want  float64
	}{
		{"nil usage", mini, nil, 0},
		{"zero price", cost.Price{}, &agentfleet.Usage{InputTokens: 1000, OutputTokens: 1000}, 0},
		// 1,000,000 × 0.15 / 1e6 = 0.15
		{"a million input tokens", mini, &agentfleet.Usage{InputTokens: 1_000_000}, 0.15},
		// 1200 × 0.15 + 300 × 0.60 = 180 + 180 = 360 per million → 0.00036
		{"input and output", mini, &agentfleet.Usage{InputTokens: 1200, OutputTokens: 300, TotalTokens: 1500}, 0.00036},
		// (2000−1500) × 0.15 + 1500 × 0.075 + 100 × 0.60 = 75 + 112.5 + 60 = 247.5 → 0.0002475
		{"cached input", mini, &agentfleet.Usage{InputTokens: 2000, CachedInputTokens: 1500, OutputTokens: 100}, 0.0002475},
		// no cached price: 2000 × 2.5 + 10 × 10 = 5100 → 0.0051
		{"cached at the input price", cost.Price{Input: 2.5, Output: 10}, &agentfleet.Usage{InputTokens: 2000, CachedInputTokens: 1000, OutputTokens: 10}, 0.0051},
		// only a total: 500 × 0.15 = 75 → 0.000075
		{"total only", mini, &agentfleet.Usage{TotalTokens: 500}, 0.000075},
		// 1 × 0.60 = 0.6 → 6e-7
		{"one output token", mini, &agentfleet.Usage{OutputTokens: 1}, 6e-7},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := cost.Of(tt.price, tt.usage)
			if err != nil {
				t.Fatal(err)
			}
			if !near(got, tt.want) {
				t.Errorf("Of = %.12f, want %.12f", got, tt.want)
			}
		})
	}
}

func TestOfRefusesBadUsage(t *testing.T) {
	p := cost.Price{Input: 1}
	for _, u := range []*agentfleet.Usage{
		{InputTokens: -1}, {OutputTokens: -5}, {CachedInputTokens: -1}, {TotalTokens: -1},
		{InputTokens: 10, CachedInputTokens: 11},
	} {
		if _, err := cost.Of(p, u); !errors.Is(err, cost.ErrBadUsage) {
			t.Errorf("Of(%+v) err = %v, want ErrBadUsage", *u, err)
		}
	}
}

func TestPriceCheck(t *testing.T) {
	tests := []struct {
		price cost.Price
		want  string
	}{
		{cost.Price{Input: 0.15, CachedInput: 0.075, Output: 0.6}, ""},
		{cost.Price{}, ""},
		{cost.Price{Input: -1}, "price input -1 is negative"},
		{cost.Price{Output: math.NaN()}, "price output NaN is not a number"},
		{cost.Price{CachedInput: math.Inf(1)}, "price cached_input +Inf is not a number"},
		{cost.Price{Output: 1e6}, "price output 1e+06 is above 10000"},
	}
	for _, tt := range tests {
		err := tt.price.Check()
		if tt.want == "" {
			if err != nil {
				t.Errorf("Check(%+v) = %v", tt.price, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Check(%+v) = %v, want %q", tt.price, err, tt.want)
		}
	}
}
