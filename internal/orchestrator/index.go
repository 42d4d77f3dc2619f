package orchestrator

import "iter"

// indexFew is how many entries an index keeps in a slice before it moves
// them to a map: a session's index of message ids and runs mostly has a
// handful, and a map of one entry costs some 250 bytes, a slice entry 24.
const indexFew = 8

// index maps strings to values, small while it has few entries: a slice
// searched in order up to indexFew of them, a map beyond. Its zero value
// is empty. It is not safe for concurrent use (a session's lock guards its
// indexes).
type index[V any] struct {
	few  []keyed[V]
	many map[string]*V
}

type keyed[V any] struct {
	key string
	val *V
}

// get returns the value of key, nil if none.
func (x *index[V]) get(key string) *V {
	if x.many != nil {
		return x.many[key]
	}
	for i := range x.few {
		if x.few[i].key == key {
			return x.few[i].val
		}
	}
	return nil
}

// put sets the value of key, which has none yet.
func (x *index[V]) put(key string, v *V) {
	if x.many == nil && len(x.few) < indexFew {
		x.few = append(x.few, keyed[V]{key, v})
		return
	}
	if x.many == nil {
		x.many = make(map[string]*V, 2*indexFew)
		for _, e := range x.few {
			x.many[e.key] = e.val
		}
		x.few = nil
	}
	x.many[key] = v
}

// values returns every value, in no fixed order.
func (x *index[V]) values() iter.Seq[*V] {
	return func(yield func(*V) bool) {
		for _, e := range x.few {
			if !yield(e.val) {
				return
			}
		}
		for _, v := range x.many {
			if !yield(v) {
				return
			}
		}
	}
}

// len returns the number of entries.
func (x *index[V]) len() int { return len(x.few) + len(x.many) }

// del removes key, if it is there.
func (x *index[V]) del(key string) {
	if x.many != nil {
		delete(x.many, key)
		return
	}
	for i := range x.few {
		if x.few[i].key == key {
			x.few = append(x.few[:i], x.few[i+1:]...)
			return
		}
	}
}
