package partition

import (
	"hash/fnv"
	"slices"
	"strconv"
	"strings"
)

// Assign spreads n partitions over members, as evenly as they go (each
// member gets n/len(members) or one more), and deterministically: every
// member that sees the same set computes the same table. Each partition goes
// to the member of highest rendezvous weight hash(member, partition) that is
// not full yet, so that a member joining or leaving moves few partitions
// besides its own share. The result is the owner of each partition; all ""
// when members is empty.
func Assign(members []string, n int) []string {
	owners := make([]string, n)
	if len(members) == 0 {
		return owners
	}
	members = slices.Sorted(slices.Values(members))
	members = slices.Compact(members)
	k := len(members)
	quota := make(map[string]int, k)
	for i, m := range members {
		// The first n%k members (in sorted order) take one more.
		quota[m] = n / k
		if i < n%k {
			quota[m]++
		}
	}
	order := slices.Clone(members)
	for p := range n {
		slices.SortFunc(order, func(a, b string) int {
			wa, wb := weight(a, p), weight(b, p)
			switch {
			case wa > wb:
				return -1
			case wa < wb:
				return 1
			}
			return strings.Compare(a, b)
		})
		for _, m := range order {
			if quota[m] > 0 {
				quota[m]--
				owners[p] = m
				break
			}
		}
	}
	return owners
}

// weight is the rendezvous weight of member m for partition p: FNV-1a 64 of
// both, mixed so that similar ids spread.
func weight(m string, p int) uint64 {
	h := fnv.New64a()
	h.Write([]byte(m))
	h.Write([]byte{0})
	h.Write([]byte(strconv.Itoa(p)))
	x := h.Sum64()
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	return x
}

// Of returns the partitions owners gives member.
func Of(owners []string, member string) []int {
	var out []int
	for p, o := range owners {
		if o == member {
			out = append(out, p)
		}
	}
	return out
}
