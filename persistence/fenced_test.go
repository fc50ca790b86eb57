package persistence_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/joinery/joinery/persistence"
)

func TestStoreFencedHelper(t *testing.T) {
	a := &persistence.FencedError{Job: "j", Key: "a", Epoch: 1, Holder: 2}
	b := &persistence.FencedError{Job: "j", Key: "b", Epoch: 0, Holder: 5}
	other := errors.New("other")
	for _, tc := range []struct {
		name string
		err  error
		want []*persistence.FencedError
	}{
		{"nil", nil, nil},
		{"plain", other, nil},
		{"one", a, []*persistence.FencedError{a}},
		{"wrapped", fmt.Errorf("save: %w", a), []*persistence.FencedError{a}},
		{"joined", errors.Join(a, b), []*persistence.FencedError{a, b}},
		{"wrapped join", fmt.Errorf("x: %w", errors.Join(a, other, fmt.Errorf("y: %w", b))), []*persistence.FencedError{a, b}},
	} {
		got := persistence.Fenced(tc.err)
		if len(got) != len(tc.want) {
			t.Fatalf("%s: Fenced = %v, want %v", tc.name, got, tc.want)
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Fatalf("%s: Fenced[%d] = %v, want %v", tc.name, i, got[i], tc.want[i])
			}
		}
		if is := errors.Is(tc.err, persistence.ErrFenced); is != (len(tc.want) > 0) {
			t.Errorf("%s: errors.Is(err, ErrFenced) = %t", tc.name, is)
		}
	}
	var fe *persistence.FencedError
	if !errors.As(fmt.Errorf("w: %w", errors.Join(other, b)), &fe) || fe != b {
		t.Fatalf("errors.As = %v", fe)
	}
	if msg := a.Error(); msg != `persistence: fenced: key "a" of job "j" has owner epoch 2, write with epoch 1 refused` {
		t.Errorf("Error() = %s", msg)
	}
}
