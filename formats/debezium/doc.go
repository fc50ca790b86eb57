// Package debezium decodes Debezium JSON change events into record.Change.
//
// It owns the mapping from the Debezium envelope (bare
// {"before":…,"after":…,"op":…,"ts_ms":…} or wrapped in
// {"schema":…,"payload":…}) to record.Change, and the classification of bad
// input into stable reason codes (see DecodeError) so callers can count
// rejects by reason. DecodeEnvelope also returns the envelope's source.table
// and an ordered source position (source.lsn, source.file/pos/row, …: see
// SourcePosition) so callers can drop Debezium's at-least-once replays.
// Truncate events (op "t") are ErrTruncate. A value that is not UTF-8 or
// escapes an unpaired surrogate (\ud800k) is ReasonBadUTF8, never a key
// holding U+FFFD (internal/utf8json). DecodeMap applies the same
// rules to an envelope another format's decoder already turned into JSON
// values (formats/debeziumavro), so both formats yield identical changes.
// It does no I/O and keeps no state.
//
// DecodeEnvelopeKeep applies a column filter while decoding (Keep: the
// columns a job reads, per source table): dropped columns are stepped
// over without building their values, and still checked like the rest of
// the input. DecodeObject decodes a plain JSON object row by the same
// rules, for sources whose messages are rows rather than envelopes.
//
// # How JSON is decoded
//
// A value is decoded in three passes over its bytes. jsontext (the Go
// team's github.com/go-json-experiment/json/jsontext, the
// encoding/json/v2 tokenizer that Go 1.27 ships as encoding/json/jsontext)
// checks that it is exactly one well-formed JSON value, allowing duplicate
// names and any bytes inside strings, as encoding/json does: its grammar
// and its nesting limit (10,000) are encoding/json's, so it refuses the
// same inputs as not-json, and it does so without allocating.
// internal/utf8json then refuses bytes that are not UTF-8 and unpaired
// surrogate escapes as bad-utf8, after the syntax, in encoding/json's
// order. Last, a walker over the now valid bytes reads the envelope's
// members and builds the rows into the values encoding/json gives with
// UseNumber (json.Number keeping the number's text, string, bool, nil,
// map[string]any, []any; the last of duplicate names wins; strings with
// escapes are unquoted by jsontext). Without a filter it builds each row
// as it meets it; with one, since Debezium writes source (and so the
// table) after the rows, it notes where the rows are and comes back to
// build only the kept columns of the rows the op keeps, stepping over
// the others without building their values.
// Column names are interned in a bounded per-goroutine cache (sync.Pool),
// so a row's names cost no allocation once seen. A fuzz test compares
// every result and refusal with the encoding/json decoder.
//
// The choice was measured on the project's 2-core machine, decoding
// 1,000 users and domains envelopes shaped like internal/cdcgen's into
// map[string]any with json.Number (one core, best of six runs, per
// envelope): encoding/json 3,014 ns and 43 allocations;
// github.com/goccy/go-json 2,215 ns, 44; github.com/bytedance/sonic
// 1,327 ns, 18; jsontext's tokens into maps 1,687 ns, 35; jsontext's
// validation alone 235 ns, 0. On the same envelopes DecodeEnvelope,
// envelope rules, UTF-8 check and source position included, takes
// 1,536 ns and 17 allocations, and the encoding/json decoder it replaces
// 3,129 ns and 44 (BenchmarkDecode compares the two on more shapes, with
// and without a filter). sonic decodes a whole value into maps about as
// fast, but gives no byte spans, so a filter would pay for every dropped
// column; it refuses nesting that encoding/json accepts (10,000 levels),
// and it relies on a JIT and unsafe code for amd64 and arm64 only. goccy
// has the same lack of spans and allocates more. jsontext is pure Go,
// strict, allocation-free when it validates, and maintained with the
// standard library.
//
// Usage:
//
//	ch, err := debezium.Decode(msg.Value, msg.Pos)
//	switch {
//	case errors.Is(err, debezium.ErrTombstone):
//		// count and skip
//	case errors.Is(err, debezium.ErrTruncate):
//		// apply the truncate policy
//	case err != nil:
//		var de *debezium.DecodeError
//		if errors.As(err, &de) { rejects[de.Reason]++ }
//	}
package debezium
