// Package ingest is Joinery's HTTP ingest endpoint: it accepts JSON change
// events over HTTP and appends them to the input log (a Redis stream or a
// Kafka topic) that a Joinery source reads, answering only once the log has
// acknowledged them.
//
// It owns request parsing and validation, backpressure and the mapping of
// outcomes to status codes; Appenders own the log. It does not decode
// Debezium envelopes: any valid JSON value is one entry.
//
// Requests are POSTs with Content-Type application/json (one JSON value, or a
// JSON array of values, one entry each) or application/x-ndjson (one entry
// per non-empty line). Answers:
//
//   - 202 Accepted, {"appended": n}: Append returned nil, the n entries are in
//     the log (in request order);
//   - 400: a value is not valid JSON (the message names the line), or a
//     record is refused by CheckRecords: {"error", "reason": "bad-utf8"
//     (bytes that are not UTF-8, or a \u escape of an unpaired surrogate)
//     or "duplicate-field", "record": n}; nothing is appended;
//   - 401: Config.Token is set and the request does not carry it;
//   - 408: the body did not arrive within Config.BodyTimeout;
//   - 405: not a POST; 415: another Content-Type;
//   - 413: the body is over Config.MaxBodyBytes;
//   - 429 with Retry-After: Config.MaxInflight requests are already being
//     appended (backpressure: retry later). A request takes its slot only
//     after its body is read and checked, so clients that stall mid-body
//     never hold one;
//   - 503 with Retry-After: the Appender failed; nothing is known to be
//     appended, though a prefix may be (a retry appends it again, so readers
//     see duplicates; Joinery's sources are at-least-once anyway).
//
// Errors are JSON too: {"error": "..."}.
//
// Why franz-go (github.com/twmb/franz-go) for the Kafka appender: the Kafka
// client made for the job: pure Go, consumer groups, idempotent producer,
// in-process kfake for tests. franz-go and go-redis types stay inside this
// package.
//
// Usage:
//
//	app, err := ingest.RedisStream("localhost:6379", "users")
//	defer app.Close()
//	http.Handle("/ingest/users", ingest.Handler(ingest.Config{Appender: app}))
package ingest
