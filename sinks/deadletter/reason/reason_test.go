package reason

import (
	"regexp"
	"testing"
)

// TestWords checks that every reason is a distinct lower-case word (the
// form metric labels and dead-letter readers expect).
func TestWords(t *testing.T) {
	word := regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)
	seen := map[Reason]bool{}
	for _, r := range All {
		if !word.MatchString(string(r)) {
			t.Errorf("reason %q is not a lower-case hyphenated word", r)
		}
		if seen[r] {
			t.Errorf("reason %q is listed twice", r)
		}
		seen[r] = true
	}
	if len(All) < 20 {
		t.Fatalf("All lists %d reasons; one is missing", len(All))
	}
}

func TestLate(t *testing.T) {
	tests := []struct {
		why  string
		want Reason
	}{
		{"window-closed", "late: window-closed"},
		{"behind-watermark", "late: behind-watermark"},
	}
	for _, tt := range tests {
		if got := Late(tt.why); got != tt.want {
			t.Errorf("Late(%q) = %q, want %q", tt.why, got, tt.want)
		}
	}
}
