package builtin

import (
	"encoding/json"
	"math"
	"testing"
)

func TestToInt64(t *testing.T) {
	tests := []struct {
		name    string
		in      any
		want    int64
		wantErr string
	}{
		{"float64", float64(250), 250, ""},
		{"float64 negative", float64(-3), -3, ""},
		{"float64 fraction", 1.5, 0, "must be an integer, got 1.5"},
		{"float64 NaN", math.NaN(), 0, "must be an integer, got NaN"},
		{"float64 inf", math.Inf(1), 0, "must be an integer, got +Inf"},
		{"float64 too large", 1e19, 0, "is out of range, got 1e+19"},
		{"float64 2^63", float64(1 << 63), 0, "is out of range, got 9.223372036854776e+18"},
		{"float64 -2^63", -float64(1 << 63), math.MinInt64, ""},
		{"float32", float32(7), 7, ""},
		{"float32 fraction", float32(0.25), 0, "must be an integer, got 0.25"},
		{"int", 42, 42, ""},
		{"int8", int8(-8), -8, ""},
		{"int16", int16(1600), 1600, ""},
		{"int32", int32(-32), -32, ""},
		{"int64", int64(math.MaxInt64), math.MaxInt64, ""},
		{"uint", uint(9), 9, ""},
		{"uint8", uint8(255), 255, ""},
		{"uint16", uint16(65535), 65535, ""},
		{"uint32", uint32(1 << 31), 1 << 31, ""},
		{"uint64", uint64(1 << 40), 1 << 40, ""},
		{"uint64 too large", uint64(math.MaxUint64), 0, "is out of range, got 18446744073709551615"},
		{"json.Number int", json.Number("4096"), 4096, ""},
		{"json.Number integral float", json.Number("100.0"), 100, ""},
		{"json.Number exponent", json.Number("1e3"), 1000, ""},
		{"json.Number fraction", json.Number("2.5"), 0, "must be an integer, got 2.5"},
		{"json.Number huge", json.Number("1e400"), 0, "is out of range, got 1e400"},
		{"json.Number too large for int64", json.Number("99999999999999999999"), 0, "is out of range, got 1e+20"},
		{"json.Number garbage", json.Number("ten"), 0, `must be an integer, got "ten"`},
		{"string", "10", 0, "must be an integer, got a string"},
		{"bool", true, 0, "must be an integer, got a boolean"},
		{"object", map[string]any{}, 0, "must be an integer, got an object"},
		{"array", []any{1}, 0, "must be an integer, got an array"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := toInt64(tt.in)
			if tt.wantErr != "" {
				if err == nil {
					t.Fatalf("toInt64(%v) = %d, want error %q", tt.in, got, tt.wantErr)
				}
				if got, want := err.Error(), tt.wantErr; got != want {
					t.Errorf("error = %q, want %q", got, want)
				}
				return
			}
			if err != nil {
				t.Fatalf("toInt64(%v): %v", tt.in, err)
			}
			if got, want := got, tt.want; got != want {
				t.Errorf("toInt64(%v) = %d, want %d", tt.in, got, want)
			}
		})
	}
}

func TestIntArg(t *testing.T) {
	tests := []struct {
		name     string
		args     map[string]any
		required bool
		want     int64
		wantErr  string
	}{
		{"present", map[string]any{"n": int64(5)}, true, 5, ""},
		{"default", map[string]any{}, false, 7, ""},
		{"null is absent", map[string]any{"n": nil}, false, 7, ""},
		{"missing required", map[string]any{}, true, 0, `tool: missing required argument "n"`},
		{"below range", map[string]any{"n": -1.0}, true, 0, `tool: argument "n" must be between 0 and 10, got -1`},
		{"above range", map[string]any{"n": uint8(11)}, true, 0, `tool: argument "n" must be between 0 and 10, got 11`},
		{"fraction", map[string]any{"n": 2.5}, true, 0, `tool: argument "n" must be an integer, got 2.5`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := intArg("tool", tt.args, "n", tt.required, 7, 0, 10)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("intArg = %d, %v; want error %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got, want := got, tt.want; got != want {
				t.Errorf("intArg = %d, want %d", got, want)
			}
		})
	}
}

func TestStringArg(t *testing.T) {
	if _, _, err := stringArg("tool", map[string]any{"s": 3.0}, "s", true); err == nil || err.Error() != `tool: argument "s" must be a string, got a number` {
		t.Errorf("number: err = %v", err)
	}
	if _, _, err := stringArg("tool", map[string]any{}, "s", true); err == nil || err.Error() != `tool: missing required argument "s"` {
		t.Errorf("missing: err = %v", err)
	}
	s, ok, err := stringArg("tool", map[string]any{}, "s", false)
	if s != "" || ok || err != nil {
		t.Errorf("optional missing = %q, %v, %v; want \"\", false, nil", s, ok, err)
	}
	s, ok, err = stringArg("tool", map[string]any{"s": "hi"}, "s", true)
	if s != "hi" || !ok || err != nil {
		t.Errorf("present = %q, %v, %v; want \"hi\", true, nil", s, ok, err)
	}
}
