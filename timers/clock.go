package timers

import "time"

// Clock is a source of processing time. Code that needs processing time takes
// a Clock (or a time.Time read from one) so tests can drive it.
type Clock interface {
	Now() time.Time
}

// SystemClock is the wall clock. This file is the only place in the package
// that reads it.
type SystemClock struct{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }
