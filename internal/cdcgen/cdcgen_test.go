package cdcgen

import (
	"bytes"
	"encoding/json"
	"testing"
)

// TestSettingsLeaveBaseHistory: adding user_settings puts its changes
// between the users and domains changes without changing those.
func TestSettingsLeaveBaseHistory(t *testing.T) {
	base := Config{Seed: 3, Users: 10, Domains: 30, Changes: 400}
	with := base
	with.Settings = 12
	plain, extended := Generate(base), Generate(with)
	var kept [][]byte
	settings := 0
	for _, l := range extended.Lines {
		var env struct {
			Source struct{ Table string } `json:"source"`
		}
		if err := json.Unmarshal(l, &env); err != nil {
			t.Fatal(err)
		}
		if env.Source.Table == "user_settings" {
			settings++
			continue
		}
		kept = append(kept, l)
	}
	if settings == 0 || len(extended.Settings) == 0 {
		t.Fatalf("no user_settings changes (%d) or final rows (%d)", settings, len(extended.Settings))
	}
	if len(kept) != len(plain.Lines) {
		t.Fatalf("%d users and domains lines, want %d", len(kept), len(plain.Lines))
	}
	for i := range kept {
		if a, b := noTs(t, kept[i]), noTs(t, plain.Lines[i]); !bytes.Equal(a, b) {
			t.Fatalf("line %d differs:\n%s\n%s", i, kept[i], plain.Lines[i])
		}
	}
}

// noTs drops ts_ms (the line's index in the history, which the extra
// tables' lines shift).
func noTs(t *testing.T, l []byte) []byte {
	var m map[string]any
	if err := json.Unmarshal(l, &m); err != nil {
		t.Fatal(err)
	}
	delete(m, "ts_ms")
	b, _ := json.Marshal(m)
	return b
}
