package main

import "fmt"

// checkStreamLimits refuses negative stream limits, and turns
// --input-max-age 0 (forever) into the configuration's word for it.
func (m *Main) checkStreamLimits() error {
	s := &m.Streams
	for _, f := range []struct {
		name string
		neg  bool
		v    any
	}{
		{"history-max-age", s.HistoryMaxAge < 0, s.HistoryMaxAge}, {"history-max-bytes", s.HistoryMaxBytes < 0, s.HistoryMaxBytes},
		{"input-max-age", s.InputMaxAge < 0, s.InputMaxAge}, {"input-max-bytes", s.InputMaxBytes < 0, s.InputMaxBytes},
	} {
		if f.neg {
			return fmt.Errorf("--%s %v: must not be negative (0: no bound)", f.name, f.v)
		}
	}
	if s.InputMaxAge == 0 {
		s.InputMaxAge = -1
	}
	return nil
}
