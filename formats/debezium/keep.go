package debezium

import "slices"

// Keep is a column filter applied while decoding: for each source table it
// names, the columns of that table's rows to keep. A table it does not
// name keeps every column, and a nil *Keep keeps every column of every
// table. A Keep is not changed after NewKeep and is safe for concurrent
// use.
type Keep struct {
	tables map[string]*columnSet
}

// columnSet is the columns kept of one table, in the order given to
// NewKeep (duplicates removed), and as a set whose values are the names
// themselves, so that a decoded row's keys are these strings.
type columnSet struct {
	order []string
	set   map[string]string
}

// NewKeep returns the filter keeping, for each table of byTable, only the
// columns listed there (an empty list keeps none). The caller may change
// byTable afterwards.
func NewKeep(byTable map[string][]string) *Keep {
	k := &Keep{tables: make(map[string]*columnSet, len(byTable))}
	for table, cols := range byTable {
		k.tables[table] = newColumnSet(cols)
	}
	return k
}

func newColumnSet(cols []string) *columnSet {
	cs := &columnSet{order: []string{}, set: make(map[string]string, len(cols))}
	for _, c := range cols {
		if _, dup := cs.set[c]; !dup {
			cs.set[c] = c
			cs.order = append(cs.order, c)
		}
	}
	return cs
}

// Columns returns the columns kept of table's rows, in the order they were
// given to NewKeep, or all true when every column is kept (a nil Keep, or
// a table it does not name). cols is the caller's.
func (k *Keep) Columns(table string) (cols []string, all bool) {
	cs := k.of(table)
	if cs == nil {
		return nil, true
	}
	return slices.Clone(cs.order), false
}

// of returns the columns kept of table, nil for all of them.
func (k *Keep) of(table string) *columnSet {
	if k == nil {
		return nil
	}
	return k.tables[table]
}

// lookup returns the kept column whose name is the JSON string raw
// (quotes included; esc when it holds an escape), false when the set
// does not keep it.
func (cs *columnSet) lookup(raw []byte, esc bool) (string, bool) {
	if !esc {
		name, ok := cs.set[string(raw[1:len(raw)-1])]
		return name, ok
	}
	name, ok := cs.set[unquote(raw)]
	return name, ok
}
