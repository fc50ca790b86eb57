// Package tableprint writes a joined table as aligned text, as `joinery run`
// prints the final table of a job with a table sink. It only formats.
package tableprint

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/joinery/joinery/joins"
)

// Print writes the joined table as aligned text: one column per output
// field (in the order of columns, or sorted by name when columns is nil), one
// line per row, sorted by primary key.
func Print(w io.Writer, rows []joins.TableRow, columns []string) {
	names := columns
	if names == nil {
		seen := map[string]bool{}
		for _, r := range rows {
			for c := range r.Row {
				if !seen[c] {
					seen[c] = true
					names = append(names, c)
				}
			}
		}
		slices.Sort(names)
	}
	fmt.Fprintf(w, "\nfinal joined table (%d rows):\n", len(rows))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "pk\t"+strings.Join(names, "\t"))
	for _, r := range rows {
		cells := []string{r.PK}
		for _, c := range names {
			cells = append(cells, cell(r.Row[c]))
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	tw.Flush()
}

func cell(v any) string {
	switch x := v.(type) {
	case nil:
		return "∅"
	case string:
		return x
	case json.Number:
		return x.String()
	}
	b, _ := json.Marshal(v)
	return string(b)
}
