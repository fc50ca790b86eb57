package record

import (
	"encoding/json"
	"fmt"
	"strconv"
)

// Key is a join key: the string form of the value both sides are joined on
// (users.id = domains.user_id in the seed's join).
type Key string

// Side names the input of a two-input join.
type Side uint8

const (
	// Left is the first input (users in the seed's join).
	Left Side = 0
	// Right is the second input (domains in the seed's join).
	Right Side = 1
)

func (s Side) String() string {
	if s == Left {
		return "left"
	}
	return "right"
}

// Op is a Debezium change operation.
type Op byte

const (
	OpCreate Op = 'c' // insert
	OpRead   Op = 'r' // snapshot read
	OpUpdate Op = 'u' // update
	OpDelete Op = 'd' // delete
)

// ParseOp parses a Debezium op code. It reports false for anything else.
func ParseOp(s string) (Op, bool) {
	switch s {
	case "c", "r", "u", "d":
		return Op(s[0]), true
	}
	return 0, false
}

func (o Op) String() string {
	switch o { // constants: string(rune(o)) allocates, once per event encoded
	case OpCreate:
		return "c"
	case OpRead:
		return "r"
	case OpUpdate:
		return "u"
	case OpDelete:
		return "d"
	}
	return string(rune(o))
}

// Position is where a record sits in its source: the source name, the
// partition within it and the offset within the partition. Offsets within one
// partition grow strictly.
type Position struct {
	Source    string `json:"source"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
}

// PartitionID names the partition of a position, "source/partition"; it is the
// key of applied-offset maps.
func (p Position) PartitionID() string {
	return p.Source + "/" + strconv.FormatInt(int64(p.Partition), 10)
}

func (p Position) String() string {
	return p.PartitionID() + "@" + strconv.FormatInt(p.Offset, 10)
}

// Row is one table row as decoded from JSON. Numbers are json.Number so they
// round-trip exactly.
type Row map[string]any

// Change is one decoded CDC event of one table.
type Change struct {
	Op     Op
	Before Row // nil for c and r
	After  Row // nil for d
	Pos    Position
	TsMs   int64 // source timestamp in milliseconds, 0 when absent
}

// Event is a change routed to a join key and side. One Change can become two
// Events when the key moves (retract at the old key, insert at the new one);
// Seq tells them apart in output ids.
type Event struct {
	Key    Key
	Side   Side
	Op     Op
	Before Row
	After  Row
	Pos    Position
	Seq    int
	// Ts is the change's source time in ms (Change.TsMs, Debezium's ts_ms),
	// 0 when absent; a changelog join with output times stamps its outputs
	// from it.
	Ts int64
}

// Kind is the change kind of an output row, as Flink's RowKind.
type Kind int8

const (
	Insert       Kind = iota // +I
	UpdateBefore             // -U
	UpdateAfter              // +U
	Delete                   // -D
)

var kindNames = [...]string{"+I", "-U", "+U", "-D"}

func (k Kind) String() string {
	if int(k) < len(kindNames) && k >= 0 {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", int8(k))
}

// ParseKind parses "+I", "-U", "+U" or "-D".
func ParseKind(s string) (Kind, bool) {
	for i, n := range kindNames {
		if n == s {
			return Kind(i), true
		}
	}
	return 0, false
}

// MarshalText encodes the kind as "+I", "-U", "+U" or "-D".
func (k Kind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// UnmarshalText decodes what MarshalText wrote.
func (k *Kind) UnmarshalText(b []byte) error {
	v, ok := ParseKind(string(b))
	if !ok {
		return fmt.Errorf("record: unknown kind %q", b)
	}
	*k = v
	return nil
}

// Output is one changelog record of a join's result.
//
// ID is deterministic: it is derived from the position of the input that made
// the output, the key and the output's index among that input's outputs, so a
// replay of the same input produces the same ids. PK is the result's primary
// key as a JSON array (for users ⋈ domains: [user id, domain id], with null for
// a null-padded side). Row is the projected joined row.
type Output struct {
	ID   string `json:"id"`
	Kind Kind   `json:"op"`
	PK   string `json:"pk"`
	Row  Row    `json:"row"`
	// Ts is the event time of an event-time join's output (ms). The
	// changelog join leaves it 0 unless its spec asks for output times
	// (CDCSpec.MaxTs): then it is the larger of the input change's source
	// time and the other row's.
	Ts int64 `json:"ts,omitempty"`
	// Seq orders the outputs of one join key: it grows with every output the
	// key makes (a re-sent output keeps its Seq). Every output primary key
	// belongs to one join key, so Seq also orders the changes of one output
	// row. Outputs of one key can reach a sink out of order — two sources or
	// two nodes write their replies separately — so sinks that keep rows by
	// primary key apply an output only when its Seq is above the row's (0:
	// unordered, always applied).
	Seq uint64 `json:"seq,omitempty"`
	// RowJSON, when not nil, is Row's JSON as encoding/json writes it
	// with HTML escaping off (internal/jsonenc): the key core encodes
	// each output's row once for its outbox and leaves the bytes here, so
	// a sink's format (formats/changelog) appends them instead of
	// encoding the row again. It is a cache, not part of the output: it
	// is never encoded, and whoever changes Row must clear it.
	RowJSON []byte `json:"-"`
}

// OutputID builds the deterministic id of the n-th output made by event e.
func OutputID(e Event, n int) string {
	// e.Pos.String() + "/" + key + "/" + seq + "/" + n, built in one
	// buffer: one allocation per output, not three.
	var buf [128]byte
	b := append(buf[:0], e.Pos.Source...)
	b = append(b, '/')
	b = strconv.AppendInt(b, int64(e.Pos.Partition), 10)
	b = append(b, '@')
	b = strconv.AppendInt(b, e.Pos.Offset, 10)
	b = append(b, '/')
	b = append(b, e.Key...)
	b = append(b, '/')
	b = strconv.AppendInt(b, int64(e.Seq), 10)
	b = append(b, '/')
	b = strconv.AppendInt(b, int64(n), 10)
	return string(b)
}

// KeyOf returns the join key form of a JSON value: strings as they are,
// numbers in their JSON text, booleans as "true"/"false". It reports false for
// null, objects and arrays, which cannot be join keys.
func KeyOf(v any) (Key, bool) {
	switch x := v.(type) {
	case string:
		return Key(x), true
	case json.Number:
		return Key(x.String()), true
	case float64:
		return Key(strconv.FormatFloat(x, 'f', -1, 64)), true
	case int:
		return Key(strconv.Itoa(x)), true
	case int64:
		return Key(strconv.FormatInt(x, 10)), true
	case bool:
		return Key(strconv.FormatBool(x)), true
	}
	return "", false
}
