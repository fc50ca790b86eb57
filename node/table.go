package node

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/joinery/joinery/joins"
)

// PrintTable writes the joined table as aligned text: one column per output
// field (sorted by name unless the rows are nested per side), one line per
// row, sorted by primary key.
func PrintTable(w io.Writer, rows []joins.TableRow) {
	cols := map[string]bool{}
	for _, r := range rows {
		for c := range r.Row {
			cols[c] = true
		}
	}
	names := make([]string, 0, len(cols))
	for c := range cols {
		names = append(names, c)
	}
	slices.Sort(names)
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
