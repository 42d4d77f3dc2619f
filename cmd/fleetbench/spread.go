package main

import "slices"

// Spread is how a value measured once per round varies over the rounds:
// its median and its range.
type Spread struct {
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
}

// spreadOf returns the median and range of vs; the zero Spread if there
// are none. The median of an even count is the mean of the middle two.
func spreadOf(vs []float64) Spread {
	if len(vs) == 0 {
		return Spread{}
	}
	s := slices.Sorted(slices.Values(vs))
	n := len(s)
	med := s[n/2]
	if n%2 == 0 {
		med = (s[n/2-1] + s[n/2]) / 2
	}
	return Spread{Median: med, Min: s[0], Max: s[n-1]}
}

// median is the median of vs, 0 if there are none.
func median(vs []float64) float64 { return spreadOf(vs).Median }
