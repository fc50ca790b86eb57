// Package deadletter is the dead-letter output: where a source's rejected
// records go, each with its reason, the error, the source name, the
// position (partition/offset), the raw bytes and the time.
//
// It owns the dead-letter record format (Record, one JSON object, versioned
// by its fields: new fields are only ever added) and three outputs: a
// JSON-lines file, a Redis Stream (fields reason, source, position and
// value, the record's JSON) and a Kafka topic (key: the position, value: the
// record's JSON, headers reason and source). The Redis and Kafka outputs
// reuse the sinks' connections (sinks/redisstream, sinks/kafka).
//
// Usage:
//
//	w, err := deadletter.OpenFile("dead.jsonl")
//	err = w.Write(ctx, []deadletter.Record{deadletter.New(reason, err, pos, raw, time.Now())})
//
// Write returns once the records are durable to the output's standard
// (flushed and fsynced, XADD answered, acks=all); only then may the source
// commit past them.
package deadletter
