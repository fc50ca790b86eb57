// Package file is the JSON-lines source: it reads one message per line from a
// file or stdin, for replays, demos and tests.
//
// It owns line splitting and offsets: the file has one partition (0) and a
// line's offset is its 1-based line number. Offsets are dense: blank lines
// are returned too (with an empty Value, which the Debezium decoder treats as
// a tombstone). It does not persist committed offsets: Commit only records
// the highest committed offset (Committed), and the node stores it elsewhere
// and passes it back as Config.StartAfter on restart.
//
// Usage:
//
//	src, err := file.New(file.Config{Name: "users", Path: "users.jsonl", StartAfter: committed})
//	defer src.Close()
//	for {
//		msgs, err := src.Read(ctx, 512)
//		if err == io.EOF { break }
//		…
//	}
package file
