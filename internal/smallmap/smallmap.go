// Package smallmap is a map from strings to values that stays a slice
// while it holds few entries: a session keeps indexes of its message ids
// and runs, mostly a handful each, and a Go map of one entry costs some
// 250 bytes where a slice entry costs 24. It imports only the standard
// library.
package smallmap

import "iter"

// Few is how many entries a Map keeps in a slice before it moves them to
// a map.
const Few = 8

// Map maps strings to values, small while it has few entries: a slice
// searched in order up to Few of them, a map beyond. Its zero value is
// empty. It is not safe for concurrent use.
type Map[V any] struct {
	few  []keyed[V]
	many map[string]*V
}

type keyed[V any] struct {
	key string
	val *V
}

// Get returns the value of key, nil if none.
func (x *Map[V]) Get(key string) *V {
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

// Put sets the value of key, which has none yet.
func (x *Map[V]) Put(key string, v *V) {
	if x.many == nil && len(x.few) < Few {
		x.few = append(x.few, keyed[V]{key, v})
		return
	}
	if x.many == nil {
		x.many = make(map[string]*V, 2*Few)
		for _, e := range x.few {
			x.many[e.key] = e.val
		}
		x.few = nil
	}
	x.many[key] = v
}

// Values returns every value, in no fixed order.
func (x *Map[V]) Values() iter.Seq[*V] {
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

// Len returns the number of entries.
func (x *Map[V]) Len() int { return len(x.few) + len(x.many) }

// Delete removes key, if it is there.
func (x *Map[V]) Delete(key string) {
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
