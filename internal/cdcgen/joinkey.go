package cdcgen

import (
	"encoding/json"
	"fmt"
)

// KeyedLine is a Debezium line and the key a producer partitions it by.
type KeyedLine struct {
	Key  []byte // a JSON array of the partitioning columns' values, `[42]`
	Line []byte
}

// ByJoinKey keys lines as a producer that partitions by the join column
// does (Debezium's message.key.columns set to it): each line by its row's
// join column, cols[table] (from after, or before for a delete). An update
// that changes the join column becomes what Debezium emits when a message
// key column changes: a delete of the old row, keyed by the old value,
// then a create of the new one, keyed by the new value — so each key's
// changes stay in its own partition, in order. Lines of a table not in cols
// are keyed by their primary key column "id".
func ByJoinKey(lines [][]byte, cols map[string]string) ([]KeyedLine, error) {
	out := make([]KeyedLine, 0, len(lines))
	for _, l := range lines {
		var env map[string]any
		if err := json.Unmarshal(l, &env); err != nil {
			return nil, fmt.Errorf("cdcgen: %w", err)
		}
		src, _ := env["source"].(map[string]any)
		table, _ := src["table"].(string)
		col := cols[table]
		if col == "" {
			col = "id"
		}
		before, _ := env["before"].(map[string]any)
		after, _ := env["after"].(map[string]any)
		key := func(row map[string]any) []byte {
			b, _ := json.Marshal([]any{row[col]})
			return b
		}
		if env["op"] == "u" && before != nil && after != nil && fmt.Sprint(before[col]) != fmt.Sprint(after[col]) {
			del := map[string]any{"op": "d", "before": before, "after": nil, "source": env["source"], "ts_ms": env["ts_ms"]}
			cre := map[string]any{"op": "c", "before": nil, "after": after, "source": env["source"], "ts_ms": env["ts_ms"]}
			db, err := json.Marshal(del)
			if err != nil {
				return nil, err
			}
			cb, err := json.Marshal(cre)
			if err != nil {
				return nil, err
			}
			out = append(out, KeyedLine{Key: key(before), Line: db}, KeyedLine{Key: key(after), Line: cb})
			continue
		}
		row := after
		if row == nil {
			row = before
		}
		out = append(out, KeyedLine{Key: key(row), Line: l})
	}
	return out, nil
}
