package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/joinery/joinery/admin"
	"github.com/joinery/joinery/internal/jsonenc"
)

// render writes v as JSON or YAML, or calls table for the table format.
func render(w io.Writer, format string, v any, table func(io.Writer)) error {
	switch format {
	case "json":
		b, err := jsonenc.MarshalIndent(v, "", "  ")
		if err != nil {
			return err
		}
		_, err = w.Write(append(b, '\n'))
		return err
	case "yaml":
		// Through JSON, so YAML has the JSON field names and embedded rows
		// (json.RawMessage) become YAML structure.
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber()
		var generic any
		if err := dec.Decode(&generic); err != nil {
			return err
		}
		var buf bytes.Buffer
		enc := yaml.NewEncoder(&buf)
		enc.SetIndent(2)
		if err := enc.Encode(numbers(generic)); err != nil {
			return err
		}
		if err := enc.Close(); err != nil {
			return err
		}
		_, err = w.Write(buf.Bytes())
		return err
	default:
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		table(tw)
		return tw.Flush()
	}
}

// numbers replaces json.Numbers with int64 or float64 so YAML prints them as
// numbers.
func numbers(v any) any {
	switch x := v.(type) {
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		if f, err := x.Float64(); err == nil {
			return f
		}
		return x.String()
	case map[string]any:
		for k, e := range x {
			x[k] = numbers(e)
		}
	case []any:
		for i, e := range x {
			x[i] = numbers(e)
		}
	}
	return v
}

func membersTable(w io.Writer, ms []admin.Member) {
	fmt.Fprintln(w, "SELF\tNAME\tID\tADDRESS\tGOSSIP\tSTATUS\tKEYS\tUPTIME")
	for _, m := range ms {
		self := ""
		if m.Self {
			self = "*"
		}
		keys := "?"
		if m.KeysActive >= 0 {
			keys = strconv.Itoa(m.KeysActive)
		}
		up := "-"
		if m.Uptime > 0 {
			up = m.Uptime.Round(time.Second).String()
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", self, dash(m.Name), dash(m.ID), dash(m.Address), dash(m.GossipAddr), dash(m.Status), keys, up)
	}
	for _, m := range ms {
		if mem := m.Memory; mem != nil {
			budget := "none"
			if mem.BudgetBytes > 0 {
				budget = fmt.Sprintf("%.1f MiB", float64(mem.BudgetBytes)/(1<<20))
			}
			fmt.Fprintf(w, "\nkey memory of %s: %.1f MiB accounted of a %s budget; %d activations; passivations: idle %d, budget %d, request %d, stopped %d\n",
				dash(m.Name), float64(mem.AccountedBytes)/(1<<20), budget, mem.Activations,
				mem.Passivations["idle"], mem.Passivations["budget"], mem.Passivations["request"], mem.Passivations["stopped"])
		}
	}
}

func locationTable(w io.Writer, l admin.Location) {
	fmt.Fprintln(w, "JOB\tKEY\tNODE\tACTIVE")
	fmt.Fprintf(w, "%s\t%s\t%s\t%t\n", l.Job, l.Key, dash(l.Node), l.Active)
}

func keyStateTable(w io.Writer, ks admin.KeyState) {
	node := ks.Node
	if node == "" {
		node = "- (read from the store)"
	}
	fmt.Fprintf(w, "Job:\t%s\n", ks.Job)
	fmt.Fprintf(w, "Key:\t%s\n", ks.Key)
	fmt.Fprintf(w, "Node:\t%s\n", node)
	fmt.Fprintf(w, "Epoch:\t%d\n", ks.Epoch)
	fmt.Fprintf(w, "Late:\t%d\n", ks.Late)
	fmt.Fprintf(w, "Dead-lettered:\t%d\n", ks.DeadLettered)
	timers := "-"
	if len(ks.Timers) > 0 {
		ts := make([]string, len(ks.Timers))
		for i, t := range ks.Timers {
			ts[i] = strconv.FormatInt(t, 10)
		}
		timers = strings.Join(ts, ", ")
	}
	fmt.Fprintf(w, "Timers (%d):\t%s\n", len(ks.Timers), timers)
	fmt.Fprintf(w, "Watermark:\t%s\n", ts(ks.Watermark))
	fmt.Fprintf(w, "Outbox:\t%d\n", ks.Outbox)
	fmt.Fprintf(w, "Offsets (%d):\t\n", len(ks.Offsets))
	parts := make([]string, 0, len(ks.Offsets))
	for p := range ks.Offsets {
		parts = append(parts, p)
	}
	slices.Sort(parts)
	for _, p := range parts {
		fmt.Fprintf(w, "  %s\t%d\n", p, ks.Offsets[p])
	}
	left := "(none)"
	if len(ks.Left) > 0 && string(ks.Left) != "null" {
		left = string(ks.Left)
	}
	fmt.Fprintf(w, "Left:\t%s\n", left)
	fmt.Fprintf(w, "Rights (%d):\t\n", len(ks.Rights))
	for _, r := range ks.Rights {
		fmt.Fprintf(w, "  %s\n", r) // no tab: rows do not widen the column
	}
	if cols := rowColumns(ks.Left); cols != "" {
		fmt.Fprintf(w, "Left columns kept:\t%s\n", cols)
	}
	if cols := rowColumns(ks.Rights...); cols != "" {
		fmt.Fprintf(w, "Right columns kept:\t%s\n", cols)
	}
	if len(ks.State) > 0 && string(ks.State) != "null" {
		fmt.Fprintf(w, "State:\t\n  %s\n", ks.State)
	}
}

// rowColumns lists the columns the rows hold, sorted and comma-separated:
// a job keeps only the columns it reads (`joinery check` prints which).
// "" when there are no rows.
func rowColumns(rows ...json.RawMessage) string {
	seen := map[string]bool{}
	for _, r := range rows {
		var m map[string]json.RawMessage
		if json.Unmarshal(r, &m) != nil {
			continue
		}
		for k := range m {
			seen[k] = true
		}
	}
	if len(seen) == 0 {
		return ""
	}
	return strings.Join(slices.Sorted(maps.Keys(seen)), ", ")
}

func whyTable(w io.Writer, why admin.Why) {
	fmt.Fprintf(w, "Job:\t%s\n", why.Job)
	fmt.Fprintf(w, "Key:\t%s\n", why.Key)
	fmt.Fprintf(w, "Node:\t%s\n", dash(why.Node))
	fmt.Fprintf(w, "Watermark:\t%s (the key has seen %s)\n", ts(why.Watermark), ts(why.KeyWatermark))
	switch h := why.HeldBy; {
	case h == nil:
		fmt.Fprintf(w, "Held back by:\t-\n")
	default:
		state := fmt.Sprintf("lagging: its newest event %s, %s behind the newest of all partitions", ts(h.MaxTs), (time.Duration(h.LagMs) * time.Millisecond).String())
		if h.Idle {
			state = "idle"
		}
		fmt.Fprintf(w, "Held back by:\t%s (watermark %s, %s)\n", h.Partition, ts(h.Watermark), state)
	}
	if why.Note != "" {
		fmt.Fprintf(w, "Note:\t%s\n", why.Note)
	}
	fmt.Fprintf(w, "\nNEEDS_WATERMARK\tBEHIND_MS\tWHAT\n")
	for _, wt := range why.Waits {
		fmt.Fprintf(w, "%s\t%d\t%s\n", ts(wt.NeedsWatermark), wt.Behind, wt.What)
	}
}

func watermarksTable(w io.Writer, wm admin.Watermarks) {
	fmt.Fprintf(w, "Job %s, global watermark %s\n\n", wm.Job, ts(wm.Global))
	fmt.Fprintln(w, "SOURCE\tPARTITION\tWATERMARK\tMAX_TS\tLAG\tIDLE")
	for _, p := range wm.Partitions {
		idle := ""
		if p.Idle {
			idle = "idle"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", dash(p.Source), p.Partition, ts(p.Watermark), ts(p.MaxTs),
			(time.Duration(p.LagMs) * time.Millisecond).String(), idle)
	}
}

func hotTable(w io.Writer, hot []admin.HotKey) {
	fmt.Fprintln(w, "#\tKEY\tEVENTS/S\tSTATE_BYTES")
	for i, h := range hot {
		fmt.Fprintf(w, "%d\t%s\t%.1f\t%d\n", i+1, h.Key, h.EventsPerSec, h.StateBytes)
	}
}

// ts shows an event time; math.MinInt64 means none yet.
func ts(v int64) string {
	if v == math.MinInt64 {
		return "-"
	}
	return strconv.FormatInt(v, 10)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
