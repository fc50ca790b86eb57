package persistence

import (
	"errors"
	"fmt"

	"github.com/joinery/joinery/record"
)

// ErrFenced matches (with errors.Is) every *FencedError.
var ErrFenced = errors.New("persistence: fenced")

// FencedError is the error for one snapshot that Save refused because its
// Epoch is not the key's current owner epoch: another activation has
// acquired the key since (or, with Epoch 0, at all). The writer has lost the
// key and should stop writing it; retrying the same snapshot cannot succeed.
type FencedError struct {
	Job    string
	Key    record.Key
	Epoch  int64 // the refused snapshot's epoch (the writer's)
	Holder int64 // the key's current epoch when Save checked it
}

func (e *FencedError) Error() string {
	return fmt.Sprintf("persistence: fenced: key %q of job %q has owner epoch %d, write with epoch %d refused",
		e.Key, e.Job, e.Holder, e.Epoch)
}

// Is reports whether target is ErrFenced.
func (e *FencedError) Is(target error) bool { return target == ErrFenced }

// Fenced returns every *FencedError in err's tree (through %w wrapping and
// errors.Join), in depth-first order, which for an error from Save is batch
// order. It returns nil when err holds none, including when err is nil.
func Fenced(err error) []*FencedError {
	var out []*FencedError
	var walk func(error)
	walk = func(err error) {
		if err == nil {
			return
		}
		if fe, ok := err.(*FencedError); ok {
			out = append(out, fe)
			return
		}
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			walk(u.Unwrap())
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				walk(e)
			}
		}
	}
	walk(err)
	return out
}
