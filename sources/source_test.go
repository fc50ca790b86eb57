package sources

import (
	"errors"
	"fmt"
	"io"
	"testing"
)

func TestTransient(t *testing.T) {
	base := errors.New("connection refused")
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"plain", base, false},
		{"marked", Transient(base), true},
		{"wrapped after marking", fmt.Errorf("sources[0]: %w", Transient(base)), true},
		{"EOF", io.EOF, false},
	}
	for _, tt := range tests {
		if got := IsTransient(tt.err); got != tt.want {
			t.Errorf("%s: IsTransient = %v, want %v", tt.name, got, tt.want)
		}
	}
	if Transient(nil) != nil {
		t.Error("Transient(nil) != nil")
	}
	if err := Transient(base); !errors.Is(err, base) || err.Error() != base.Error() {
		t.Errorf("Transient(base) = %v: not base underneath", err)
	}
}
