package timers

import "slices"

// Set is one key's pending event-time timers: unique timestamps kept in
// ascending order. It is what a key's driver (keycore) keeps beside its
// join machine, where TimerService indexes the timers of many keys. Add and
// Delete cost O(n) in the key's timers, which are few. The zero value is an
// empty set; a Set is not safe for concurrent use.
type Set struct{ ts []int64 }

// SetOf returns a set of ts, which must be ascending and unique (as
// Timestamps returns them); the set owns ts from then on.
func SetOf(ts []int64) Set { return Set{ts: ts} }

// Add adds ts; it reports whether ts was new.
func (s *Set) Add(ts int64) bool {
	i, found := slices.BinarySearch(s.ts, ts)
	if found {
		return false
	}
	s.ts = slices.Insert(s.ts, i, ts)
	return true
}

// Delete removes ts; it reports whether ts was there.
func (s *Set) Delete(ts int64) bool {
	i, found := slices.BinarySearch(s.ts, ts)
	if !found {
		return false
	}
	s.ts = slices.Delete(s.ts, i, i+1)
	return true
}

// Next is the earliest timer.
func (s *Set) Next() (int64, bool) {
	if len(s.ts) == 0 {
		return 0, false
	}
	return s.ts[0], true
}

// PopDue removes and returns the earliest timer if it is at or below upTo.
func (s *Set) PopDue(upTo int64) (int64, bool) {
	if len(s.ts) == 0 || s.ts[0] > upTo {
		return 0, false
	}
	ts := s.ts[0]
	s.ts = s.ts[1:]
	return ts, true
}

// Len is the number of timers.
func (s *Set) Len() int { return len(s.ts) }

// Timestamps returns the timers in ascending order; the slice is the set's:
// read-only, valid until the next change.
func (s *Set) Timestamps() []int64 { return s.ts }
