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
