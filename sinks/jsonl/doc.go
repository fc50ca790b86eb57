// Package jsonl is the JSON-lines sink: it writes join outputs, one line each,
// encoded by a changelog.Format, to an io.Writer (stdout) or a file.
//
// It owns buffering and flushing; it does not dedupe. A file is opened for
// append, so a restarted node continues it, and outputs replayed after a
// restart appear again with the same ids: readers dedupe by id. A partial
// last line, left by a node killed mid-write, is cut off before a restarted
// node appends (internal/linefile).
//
// Usage:
//
//	s, err := jsonl.Create("out.jsonl", changelog.Upsert)
//	defer s.Close()
//	err = s.Write(ctx, outputs)
package jsonl
