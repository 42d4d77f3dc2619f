package pipeline

import (
	"context"
	"errors"
	"slices"
	"testing"
)

func TestChain(t *testing.T) {
	errDenied := errors.New("denied")
	block := &BeforeResult{Block: true, Reason: "no"}
	rewrite := &BeforeResult{Args: map[string]any{"x": 1}}
	// hook returns a BeforeHook named name that records its run in ran and
	// answers res, err.
	type spec struct {
		name string
		res  *BeforeResult
		err  error
	}
	tests := []struct {
		name    string
		hooks   []*spec // nil: a nil hook
		wantNil bool    // Chain returns nil
		wantRan []string
		wantRes *BeforeResult
		wantErr error
	}{
		{name: "none", wantNil: true},
		{name: "only nil", hooks: []*spec{nil, nil}, wantNil: true},
		{name: "one", hooks: []*spec{{name: "a"}}, wantRan: []string{"a"}},
		{name: "all proceed", hooks: []*spec{{name: "a"}, nil, {name: "b"}, {name: "c"}}, wantRan: []string{"a", "b", "c"}},
		{name: "first blocks", hooks: []*spec{{name: "a", res: block}, {name: "b"}}, wantRan: []string{"a"}, wantRes: block},
		{name: "second blocks", hooks: []*spec{{name: "a"}, {name: "b", res: block}, {name: "c"}}, wantRan: []string{"a", "b"}, wantRes: block},
		{name: "rewrite stops", hooks: []*spec{{name: "a", res: rewrite}, {name: "b", res: block}}, wantRan: []string{"a"}, wantRes: rewrite},
		{name: "error stops", hooks: []*spec{nil, {name: "a", err: errDenied}, {name: "b"}}, wantRan: []string{"a"}, wantErr: errDenied},
		{name: "last fails", hooks: []*spec{{name: "a"}, {name: "b", err: errDenied}}, wantRan: []string{"a", "b"}, wantErr: errDenied},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var ran []string
			var hooks []BeforeHook
			for _, s := range tt.hooks {
				if s == nil {
					hooks = append(hooks, nil)
					continue
				}
				hooks = append(hooks, func(context.Context, *BeforeContext) (*BeforeResult, error) {
					ran = append(ran, s.name)
					return s.res, s.err
				})
			}
			h := Chain(hooks...)
			if got := h == nil; got != tt.wantNil {
				t.Fatalf("Chain(...) == nil is %v, want %v", got, tt.wantNil)
			}
			if h == nil {
				return
			}
			res, err := h(context.Background(), &BeforeContext{})
			if res != tt.wantRes || !errors.Is(err, tt.wantErr) || (err == nil) != (tt.wantErr == nil) {
				t.Errorf("hook = %v, %v; want %v, %v", res, err, tt.wantRes, tt.wantErr)
			}
			if !slices.Equal(ran, tt.wantRan) {
				t.Errorf("ran %v, want %v", ran, tt.wantRan)
			}
		})
	}
}
