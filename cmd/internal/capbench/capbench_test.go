package capbench

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// TestCapacitySmoke runs both variants on a small input and checks that
// every figure of the report is filled and sane, in the table and in the
// JSON.
func TestCapacitySmoke(t *testing.T) {
	if raceEnabled {
		t.Skip("the node starts protoactor remoting, which races (see the Makefile); run without -race")
	}
	rep, err := Run(context.Background(), Config{Changes: 2000, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Results) != len(Variants) {
		t.Fatalf("%d results, want %d", len(rep.Results), len(Variants))
	}
	if rep.RedisVersion == "" || rep.Users != 500 || rep.Domains != 1500 {
		t.Errorf("report: redis %q, %d user ids, %d domain ids", rep.RedisVersion, rep.Users, rep.Domains)
	}
	for _, r := range rep.Results {
		checks := []struct {
			what string
			ok   bool
		}{
			{"input changes", r.Lines > 2000 && r.Read == int64(r.Lines)},
			{"live join keys", r.JoinKeys > 0 && r.JoinKeys <= rep.Users},
			{"stored rows", r.StoredRows == r.Users+r.Domains && r.Users > 0 && r.Domains > r.Users},
			{"outputs", r.Outputs > 0},
			{"used_memory", r.UsedMemoryBaseline > 0 && r.UsedMemory > r.UsedMemoryBaseline},
			{"used_memory per join key", r.BytesPerJoinKey > 0 && r.BytesPerJoinKey < 1<<20},
			{"used_memory per stored row", r.BytesPerRow > 0 && r.BytesPerRow < r.BytesPerJoinKey},
			{"dbsize", r.DBSize >= int64(r.JoinKeys) && r.RedisKeysPerJoinKey >= 1},
			{"memory usage sum", r.MemoryUsageSum > 0 && r.MemoryUsageSum <= r.UsedMemoryDelta},
			{"kinds", len(r.Kinds) > 0},
			{"stored join keys", r.StoredJoinKeys >= r.JoinKeys && r.StoredJoinKeys <= rep.Users},
			{"memory usage per join key", r.PerJoinKey.P50 > 0 && r.PerJoinKey.P50 <= r.PerJoinKey.P90 && r.PerJoinKey.P99 <= r.PerJoinKey.Max},
			{"samples", len(r.Samples) == 2 && r.Samples[1].Bytes == r.PerJoinKey.Max},
			{"needed bytes", r.NeededPerJoinKey > 0 && r.NeededPerJoinKey < r.WholeRowsPerJoinKey},
			{"live keys", r.LiveKeys > 0},
			{"heap", r.HeapBytes > 0 && r.HeapPerLiveKey > 0},
		}
		for _, c := range checks {
			if !c.ok {
				t.Errorf("%s: %s not sane: %+v", r.Variant, c.what, r)
			}
		}
		var kindKeys int64
		perJoinKey := false
		for _, k := range r.Kinds {
			kindKeys += k.Keys
			perJoinKey = perJoinKey || k.PerJoinKey
			var n int64
			for _, c := range k.Encodings {
				n += c
			}
			if n != k.Keys || k.Type == "" {
				t.Errorf("%s: kind %s: type %q, %d keys, %d by encoding", r.Variant, k.Kind, k.Type, k.Keys, n)
			}
		}
		if kindKeys != r.DBSize || !perJoinKey {
			t.Errorf("%s: kinds hold %d keys of %d; one per join key: %v", r.Variant, kindKeys, r.DBSize, perJoinKey)
		}
		for _, s := range r.Samples {
			var sum int64
			for _, k := range s.Keys {
				sum += k.Bytes
				if k.Encoding == "" || k.Bytes <= 0 || !strings.Contains(k.Name, s.JoinKey) {
					t.Errorf("%s: %s join key %q: key %+v", r.Variant, s.Which, s.JoinKey, k)
				}
			}
			if len(s.Keys) == 0 || sum != s.Bytes {
				t.Errorf("%s: %s join key %q: %d keys, %d B of %d", r.Variant, s.Which, s.JoinKey, len(s.Keys), sum, s.Bytes)
			}
		}
	}
	narrow, wide := rep.Results[0], rep.Results[1]
	if narrow.PadColumns != 0 || wide.PadColumns != 10 || wide.WholeRowsPerJoinKey <= narrow.WholeRowsPerJoinKey ||
		wide.NeededPerJoinKey != narrow.NeededPerJoinKey || wide.JoinKeys != narrow.JoinKeys {
		t.Errorf("narrow %+v\nwide %+v", narrow, wide)
	}

	var table, js bytes.Buffer
	rep.WriteTable(&table)
	for _, want := range []string{"used_memory per join key", "Redis keys per join key", "heap per live key", "narrow", "wide"} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("table has no %q:\n%s", want, table.String())
		}
	}
	if err := rep.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Results []map[string]any `json:"results"`
	}
	if err := json.Unmarshal(js.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	for _, r := range got.Results {
		for _, k := range []string{"used_memory_per_join_key", "used_memory_per_stored_row", "redis_keys_per_join_key",
			"heap_bytes_per_live_key", "needed_bytes_per_join_key", "whole_row_bytes_per_join_key", "samples", "kinds"} {
			if v, ok := r[k]; !ok || v == nil || v == 0.0 {
				t.Errorf("%v: JSON %q = %v", r["variant"], k, v)
			}
		}
	}
}

func TestSplitName(t *testing.T) {
	for _, tc := range []struct{ name, kind, key string }{
		{"{1abc}32525", "k", "32525"},
		{"o{1abc}32525", "o", "32525"},
		{"{12Zq}a:b}c", "k", "a:b}c"},
		{"joinery:{job:7:12}:timers", "timers", ""},
		{"joinery:{job:0:3}:incarnation", "incarnation", ""},
		{"joinery:jobs", "other", ""},
		{"other", "other", ""},
	} {
		if kind, key := splitName(tc.name); kind != tc.kind || key != tc.key {
			t.Errorf("splitName(%q) = %q, %q; want %q, %q", tc.name, kind, key, tc.kind, tc.key)
		}
	}
}
