package pipeline

import "context"

// Chain returns a BeforeHook that runs hooks in order, the first listed
// first, and stops at the first that blocks, rewrites or fails the call (a
// non-nil result or an error), returning what it returned; a call every
// hook lets through unchanged proceeds (nil, nil). Nil hooks are skipped,
// and Chain of no hook but nil ones is nil, so that a pipeline without
// hooks stays without.
func Chain(hooks ...BeforeHook) BeforeHook {
	var set []BeforeHook
	for _, h := range hooks {
		if h != nil {
			set = append(set, h)
		}
	}
	switch len(set) {
	case 0:
		return nil
	case 1:
		return set[0]
	}
	return func(ctx context.Context, in *BeforeContext) (*BeforeResult, error) {
		for _, h := range set {
			if res, err := h(ctx, in); res != nil || err != nil {
				return res, err
			}
		}
		return nil, nil
	}
}
