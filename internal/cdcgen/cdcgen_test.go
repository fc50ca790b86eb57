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

// TestPadAndLSNKeepHistory: Config.Pad adds its columns, PadBytes each, to every
// users and domains row, Config.LSN a source.lsn ascending with the line,
// and neither changes anything else of the history.
func TestPadAndLSNKeepHistory(t *testing.T) {
	base := Config{Seed: 5, Users: 10, Domains: 30, Changes: 300}
	wide := base
	wide.Pad = 3
	wide.LSN = true
	plain, padded := Generate(base), Generate(wide)
	if len(padded.Lines) != len(plain.Lines) {
		t.Fatalf("%d lines, want %d", len(padded.Lines), len(plain.Lines))
	}
	rows := 0
	for i, l := range padded.Lines {
		var env map[string]any
		if err := json.Unmarshal(l, &env); err != nil {
			t.Fatal(err)
		}
		src := env["source"].(map[string]any)
		if lsn, ok := src["lsn"].(float64); !ok || lsn != float64(i+1) {
			t.Fatalf("line %d: source.lsn %#v, want %d", i, src["lsn"], i+1)
		}
		delete(src, "lsn")
		for _, img := range []string{"before", "after"} {
			row, _ := env[img].(map[string]any)
			if row == nil {
				continue
			}
			rows++
			for c := 1; c <= wide.Pad; c++ {
				name := PadColumn(c)
				if v, ok := row[name].(string); !ok || len(v) != PadBytes {
					t.Fatalf("line %d %s: %s = %#v, want a string of %d bytes", i, img, name, row[name], PadBytes)
				}
				delete(row, name)
			}
		}
		got, err := json.Marshal(env)
		if err != nil {
			t.Fatal(err)
		}
		if want := noTs(t, plain.Lines[i]); !bytes.Equal(noTs(t, got), want) {
			t.Fatalf("line %d without its pad columns:\n%s\nwant\n%s", i, got, want)
		}
	}
	if rows == 0 {
		t.Fatal("no rows")
	}
	for id, u := range padded.Users {
		if len(u) != len(plain.Users[id])+wide.Pad {
			t.Fatalf("final user %d has %d columns, want %d", id, len(u), len(plain.Users[id])+wide.Pad)
		}
	}
}
