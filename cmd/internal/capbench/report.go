package capbench

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/joinery/joinery/internal/cdcgen"
)

// Report is a run's figures, one Result per variant.
type Report struct {
	Changes        int      `json:"changes"`
	Seed           uint64   `json:"seed"`
	Users          int      `json:"user_ids"`
	Domains        int      `json:"domain_ids"`
	Job            string   `json:"job"`
	GoVersion      string   `json:"go_version"`
	RedisVersion   string   `json:"redis_version"`
	RedisAllocator string   `json:"redis_allocator"`
	Results        []Result `json:"results"`
}

// Result is one variant's figures.
type Result struct {
	Variant    string `json:"variant"`
	PadColumns int    `json:"pad_columns"`
	// Lines is the Debezium changes of the input, snapshot included.
	Lines int `json:"input_changes"`
	// The final tables: their rows (the rows the join's state holds) and
	// the live join keys (keys with at least one of them).
	Users      int `json:"users"`
	Domains    int `json:"domains"`
	StoredRows int `json:"stored_rows"`
	JoinKeys   int `json:"join_keys"`
	// What the rows take as JSON, in all and per join key: the projected
	// columns they supply, and the whole rows.
	NeededBytes         int64   `json:"needed_bytes"`
	WholeRowBytes       int64   `json:"whole_row_bytes"`
	NeededPerJoinKey    float64 `json:"needed_bytes_per_join_key"`
	WholeRowsPerJoinKey float64 `json:"whole_row_bytes_per_join_key"`

	// The node: changes read, outputs written, changes rejected, node.Run's
	// wall time; keys live (key actors active) at the end of node.Run, the
	// heap's live bytes then minus before it and per live key; key actors
	// stopped by the end of node.Close.
	Read           int64   `json:"read"`
	Outputs        int64   `json:"outputs"`
	Rejected       int64   `json:"rejected"`
	RunSec         float64 `json:"run_sec"`
	LiveKeys       int64   `json:"live_keys"`
	HeapBytes      int64   `json:"heap_bytes"`
	HeapPerLiveKey float64 `json:"heap_bytes_per_live_key"`
	Passivations   int64   `json:"passivations"`

	// Redis: used_memory before the node started and after it closed, the
	// difference, per join key and per stored row.
	UsedMemoryBaseline int64   `json:"used_memory_baseline"`
	UsedMemory         int64   `json:"used_memory"`
	UsedMemoryDelta    int64   `json:"used_memory_delta"`
	BytesPerJoinKey    float64 `json:"used_memory_per_join_key"`
	BytesPerRow        float64 `json:"used_memory_per_stored_row"`
	// DBSIZE, and per live join key.
	DBSize              int64   `json:"dbsize"`
	RedisKeysPerJoinKey float64 `json:"redis_keys_per_join_key"`
	// MemoryUsageSum is the sum of every key's MEMORY USAGE (used_memory
	// also counts the keyspace's own tables).
	MemoryUsageSum int64 `json:"memory_usage_sum"`
	// Kinds are the keys by kind and type, largest total first.
	Kinds []KeyKind `json:"kinds"`
	// StoredJoinKeys is the join keys that have a key in Redis;
	// PerJoinKey the quantiles of their keys' MEMORY USAGE summed per
	// join key; Samples the keys of the median and the largest join key.
	StoredJoinKeys int       `json:"stored_join_keys"`
	PerJoinKey     Quantiles `json:"memory_usage_per_join_key"`
	Samples        []Sample  `json:"samples"`
}

// KeyKind is the Redis keys of one kind and type.
type KeyKind struct {
	Kind string `json:"kind"`
	Type string `json:"type"`
	// PerJoinKey: the kind's names end in a join key.
	PerJoinKey bool    `json:"per_join_key"`
	Keys       int64   `json:"keys"`
	Bytes      int64   `json:"memory_usage"`
	MeanBytes  float64 `json:"mean_memory_usage"`
	// Encodings counts the keys per OBJECT ENCODING (a hash's listpack or
	// hashtable, a string's embstr, raw or int...).
	Encodings map[string]int64 `json:"encodings"`
}

// Quantiles of a distribution of bytes.
type Quantiles struct {
	P50 int64 `json:"p50"`
	P90 int64 `json:"p90"`
	P99 int64 `json:"p99"`
	Max int64 `json:"max"`
}

// Sample is one join key's Redis keys.
type Sample struct {
	Which   string     `json:"which"` // median or largest
	JoinKey string     `json:"join_key"`
	Bytes   int64      `json:"memory_usage"`
	Keys    []RedisKey `json:"keys"`
}

// RedisKey is one key of a Sample.
type RedisKey struct {
	Name     string `json:"name"`
	Kind     string `json:"kind"`
	Type     string `json:"type"`
	Encoding string `json:"encoding"`
	// Length is a string's bytes, a hash's fields, a set's members.
	Length int64 `json:"length"`
	Bytes  int64 `json:"memory_usage"`
	// Fields are a hash's fields with their name's and value's sizes.
	Fields []Field `json:"fields,omitempty"`
}

// Field is one field of a sampled hash: its name (quoted where it holds
// bytes that do not print) and the sizes of its name and value.
type Field struct {
	Name       string `json:"name"`
	NameBytes  int    `json:"name_bytes"`
	ValueBytes int    `json:"value_bytes"`
}

// WriteJSON writes the report as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	e := json.NewEncoder(w)
	e.SetIndent("", "  ")
	return e.Encode(r)
}

// WriteTable writes the report as text: the figures side by side per
// variant, then each variant's keys by kind and its sampled join keys.
func (r *Report) WriteTable(w io.Writer) {
	fmt.Fprintf(w, "capacity: users ⋈ domains (inner, 1 user : 3 domains), %d changes after the snapshot, seed %d; redis %s (%s), %s\n\n",
		r.Changes, r.Seed, r.RedisVersion, r.RedisAllocator, r.GoVersion)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	row := func(name string, f func(x *Result) string) {
		cells := []string{name}
		for i := range r.Results {
			cells = append(cells, f(&r.Results[i]))
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t")
	}
	row("", func(x *Result) string { return x.Variant })
	row("extra unused columns", func(x *Result) string { return fmt.Sprintf("%d × %d B", x.PadColumns, cdcgen.PadBytes) })
	row("input changes", func(x *Result) string { return fmt.Sprint(x.Lines) })
	row("live join keys", func(x *Result) string { return fmt.Sprint(x.JoinKeys) })
	row("stored rows (users + domains)", func(x *Result) string { return fmt.Sprintf("%d + %d", x.Users, x.Domains) })
	row("Redis used_memory (minus empty server)", func(x *Result) string { return fmt.Sprintf("%.1f MiB", float64(x.UsedMemoryDelta)/(1<<20)) })
	row("used_memory per join key", func(x *Result) string { return fmt.Sprintf("%.0f B", x.BytesPerJoinKey) })
	row("used_memory per stored row", func(x *Result) string { return fmt.Sprintf("%.0f B", x.BytesPerRow) })
	row("Redis keys (DBSIZE)", func(x *Result) string { return fmt.Sprint(x.DBSize) })
	row("Redis keys per join key", func(x *Result) string { return fmt.Sprintf("%.2f", x.RedisKeysPerJoinKey) })
	row("per-join-key hashes' encodings", func(x *Result) string {
		m := map[string]int64{}
		for _, k := range x.Kinds {
			if k.PerJoinKey && k.Type == "hash" {
				for e, n := range k.Encodings {
					m[e] += n
				}
			}
		}
		return encodings(m)
	})
	row("MEMORY USAGE per join key p50/p90/p99/max", func(x *Result) string {
		q := x.PerJoinKey
		return fmt.Sprintf("%d/%d/%d/%d B", q.P50, q.P90, q.P99, q.Max)
	})
	row("projected columns' JSON per join key", func(x *Result) string { return fmt.Sprintf("%.0f B", x.NeededPerJoinKey) })
	row("whole rows' JSON per join key", func(x *Result) string { return fmt.Sprintf("%.0f B", x.WholeRowsPerJoinKey) })
	row("used_memory / projected JSON", func(x *Result) string { return ratio(x.BytesPerJoinKey, x.NeededPerJoinKey) })
	row("used_memory / whole rows' JSON", func(x *Result) string { return ratio(x.BytesPerJoinKey, x.WholeRowsPerJoinKey) })
	row("node: keys live at the end of the run", func(x *Result) string { return fmt.Sprint(x.LiveKeys) })
	row("node: heap per live key", func(x *Result) string { return fmt.Sprintf("%.0f B", x.HeapPerLiveKey) })
	row("node: run (wall)", func(x *Result) string { return fmt.Sprintf("%.1f s", x.RunSec) })
	row("node: outputs", func(x *Result) string { return fmt.Sprint(x.Outputs) })
	row("node: keys passivated by its close", func(x *Result) string { return fmt.Sprint(x.Passivations) })
	tw.Flush()
	for _, x := range r.Results {
		fmt.Fprintf(w, "\n%s: Redis keys by kind (MEMORY USAGE summed: %.1f MiB of used_memory's %.1f MiB)\n",
			x.Variant, float64(x.MemoryUsageSum)/(1<<20), float64(x.UsedMemoryDelta)/(1<<20))
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "kind\ttype\tkeys\tper join key\tmean MEMORY USAGE\ttotal\tencodings")
		for _, k := range x.Kinds {
			per := "-"
			if k.PerJoinKey && x.JoinKeys > 0 {
				per = fmt.Sprintf("%.2f", float64(k.Keys)/float64(x.JoinKeys))
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%.0f B\t%.1f MiB\t%s\n", k.Kind, k.Type, k.Keys, per, k.MeanBytes, float64(k.Bytes)/(1<<20), encodings(k.Encodings))
		}
		tw.Flush()
		for _, s := range x.Samples {
			fmt.Fprintf(w, "%s join key %q (%s of %d): %d B in %d keys\n", x.Variant, s.JoinKey, s.Which, x.StoredJoinKeys, s.Bytes, len(s.Keys))
			for _, k := range s.Keys {
				fmt.Fprintf(w, "  %-8s %-6s %-10s length %-5d MEMORY USAGE %d B\n", k.Kind, k.Type, k.Encoding, k.Length, k.Bytes)
				for _, f := range k.Fields {
					fmt.Fprintf(w, "    %-24s name %2d B  value %3d B\n", f.Name, f.NameBytes, f.ValueBytes)
				}
			}
		}
	}
}

func ratio(a, b float64) string {
	if b == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f×", a/b)
}

// encodings prints a kind's encodings, the most common first.
func encodings(m map[string]int64) string {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	slices.SortFunc(names, func(a, b string) int {
		if c := cmp.Compare(m[b], m[a]); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	var parts []string
	for _, n := range names {
		parts = append(parts, fmt.Sprintf("%s %d", n, m[n]))
	}
	return strings.Join(parts, ", ")
}
