// Package redisstream is the Redis Streams sink: it appends each join output
// to a stream as an entry with the fields "id" (the output id) and "value"
// (the line encoded by a changelog.Format).
//
// It owns batching (one pipelined round trip per Write) and optional
// approximate trimming (MAXLEN ~). It does not dedupe: outputs replayed after
// a restart are appended again with the same ids, so readers dedupe by "id".
// go-redis types stay inside this package.
//
// Usage:
//
//	s, err := redisstream.New(ctx, redisstream.Config{Addr: "localhost:6379",
//		Stream: "joined", Format: changelog.Changelog})
//	defer s.Close()
//	err = s.Write(ctx, outputs)
package redisstream
