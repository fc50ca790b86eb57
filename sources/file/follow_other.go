//go:build !linux

package file

// newWaker is nil off Linux: a following source polls.
func newWaker(string) waker { return nil }
