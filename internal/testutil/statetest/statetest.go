// Package statetest builds a key's state as a key actor stores it, for
// tests that write state straight into a store and read it back offline.
// It stands apart from testutil because the key core's own tests import
// testutil, and this package imports the key core.
package statetest

import (
	"testing"

	"github.com/joinery/joinery/keycore"
)

// JoinState is the stored state of a key that holds the join snapshot join
// and nothing else (an empty outbox).
func JoinState(t testing.TB, join []byte) []byte {
	t.Helper()
	b, err := keycore.EncodeJoinState(join)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
