package node

import (
	"slices"

	"github.com/joinery/joinery/formats/debezium"
	"github.com/joinery/joinery/job"
	"github.com/joinery/joinery/joins"
	"github.com/joinery/joinery/record"
)

// keptColumns is, per join side (a two-way join's Left and Right, or a
// multi-way join's table index), the set of columns the key state keeps
// (joins.CDCSpec.Kept); a nil set keeps whole rows.
type keptColumns []map[string]struct{}

// keptOf computes the kept columns of a changelog join, or of an
// event-time join (timed: job.JoinPlan.TimedKept).
func keptOf(cdc *joins.CDCSpec, multi *joins.MultiSpec, timed [2][]string) keptColumns {
	set := func(cols []string, all bool) map[string]struct{} {
		if all {
			return nil
		}
		m := make(map[string]struct{}, len(cols))
		for _, c := range cols {
			m[c] = struct{}{}
		}
		return m
	}
	switch {
	case multi != nil:
		k := make(keptColumns, len(multi.Tables))
		for i := range multi.Tables {
			k[i] = set(multi.Kept(i))
		}
		return k
	case cdc != nil:
		return keptColumns{set(cdc.Kept(record.Left)), set(cdc.Kept(record.Right))}
	case timed[record.Left] != nil || timed[record.Right] != nil:
		return keptColumns{set(timed[record.Left], timed[record.Left] == nil), set(timed[record.Right], timed[record.Right] == nil)}
	}
	return nil
}

// projectRow drops from row the columns side's state does not keep (an
// event-time join's input, after its key, time and filter are read).
func (k keptColumns) projectRow(side record.Side, row record.Row) {
	if int(side) >= len(k) || k[side] == nil {
		return
	}
	for col := range row {
		if _, ok := k[side][col]; !ok {
			delete(row, col)
		}
	}
}

// project drops from c's rows the columns side's state does not keep. It
// runs after the source's filter (which may read any column) and before
// the change is routed, so every row a key holds, stores and sends is
// projected.
func (k keptColumns) project(side record.Side, c *record.Change) {
	if int(side) >= len(k) || k[side] == nil {
		return
	}
	keep := k[side]
	for _, r := range [2]record.Row{c.Before, c.After} {
		for col := range r {
			if _, ok := keep[col]; !ok {
				delete(r, col)
			}
		}
	}
}

// decoderKeep is the column filter a Debezium JSON source's decoder
// applies (debezium.DecodeEnvelopeKeep), so that the columns no part of
// the job reads are never decoded: per table bound in sources[].tables,
// its side's kept columns. nil (every column) for a source with a filter
// (which may read any column: project drops them after it), a source
// bound to one side whatever the table, another format, or an event-time
// join.
func (k keptColumns) decoderKeep(src *job.Source, filtered bool, sideOf func(string) (record.Side, bool)) *debezium.Keep {
	if k == nil || filtered || src.Side != "" || len(src.Tables) == 0 || src.Format != "" && src.Format != "debezium" {
		return nil
	}
	byTable := map[string][]string{}
	for table, binding := range src.Tables {
		side, ok := sideOf(binding)
		if !ok || int(side) >= len(k) || k[side] == nil {
			continue
		}
		cols := make([]string, 0, len(k[side]))
		for c := range k[side] {
			cols = append(cols, c)
		}
		slices.Sort(cols)
		byTable[table] = cols
	}
	if len(byTable) == 0 {
		return nil
	}
	return debezium.NewKeep(byTable)
}
