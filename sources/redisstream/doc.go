// Package redisstream is the Redis Streams source: it reads one stream as a
// member of a consumer group and acknowledges entries (XACK) once they are
// committed.
//
// It owns the consumer-group protocol and the mapping of stream IDs to
// offsets. Each entry carries its payload in the field "value" (other fields
// are ignored; an entry without "value", or one deleted from the stream while
// pending, is delivered with a nil Value, which the Debezium decoder treats
// as a tombstone, so it is counted, skipped and acknowledged).
//
// A stream is one partition (0). An entry ID ms-seq becomes the offset
// ms<<20 | seq, which keeps stream order; IDs with seq >= 2^20 or ms >= 2^43
// are rejected (see Offset).
//
// Delivery is at least once: entries read but not acknowledged before a crash
// are re-delivered to the same consumer name when it starts again. Entries
// pending longer than Config.ClaimMinIdle (default 30s) on other consumers,
// presumably dead, are claimed (XAUTOCLAIM) and delivered: all of them when a
// source starts, merged in ID order with its own pending entries and before
// new ones; then, every ClaimMinIdle/2, those after the last entry the
// source delivered, so offsets keep growing. An idle entry older than that
// stays pending until a consumer starts.
//
// One source of a group reads the stream at a time: it holds the stream's
// lease (Config.Lease, default 10 s, renewed every third of it), and the
// others wait as hot standbys. Several consumers reading at once would give
// key actors entries out of offset order, and their skip rule (an offset not
// above the highest applied is a replay) would drop some. A source that
// takes the lease over first claims everything its predecessors left
// pending, whatever its idle time, and delivers it in ID order before new
// entries; each read of new entries checks the lease in the same script, so
// a holder paused past its lease cannot read once it wakes (Read returns
// ErrLeaseLost; open a new source). Close releases the lease, so a standby
// takes over at once after a graceful stop.
//
// go-redis types stay inside this package.
//
// Usage:
//
//	src, err := redisstream.New(ctx, redisstream.Config{Addr: "localhost:6379",
//		Stream: "users", Group: "joinery", Consumer: "node-1"})
//	defer src.Close()
//	msgs, err := src.Read(ctx, 512) // empty, nil after Block without data
//	…
//	err = src.Commit(ctx, []record.Position{msgs[len(msgs)-1].Pos})
package redisstream
