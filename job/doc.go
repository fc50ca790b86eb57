// Package job owns the job file: the YAML spec that names a job's sources, its
// join, its sinks, its state store and its cluster settings, and Validate,
// which reports every bad field by its path before a node starts.
//
// A source, sink or dead-letter entry is two parts (conn.go). job declares
// and checks the fields every entry of its role has (Source: name, type,
// format, side or tables, watermark, rate, filter, dedup, bad-input
// policies; Sink: type, format, encoding and its schema registry); the
// rest of the entry is its connector's, kept as written (Conn) and decoded
// once, when the job is compiled, by the kind of its type
// (connectors/all) into the kind's typed configuration, which the Plan
// holds and the node opens from. job knows no connector by name and none
// of their fields: what it needs of one (key groups, repartitioning, HTTP
// ingest's refusals, secrets) the configuration says through the small
// interfaces of connectors (docs/concepts/architecture.md, "Adding a connector").
//
// Compile (plan.go) is the only compiler of a job: it reports every bad
// field and returns the Plan a node wires (the join as the key core's
// machine spec, key expressions, compiled filters, watermark settings,
// sinks' formats, TLS built, addresses split, defaults applied). Validate is
// Compile with the Plan dropped; a node compiles nothing itself
// (docs/concepts/architecture.md, "Compile once: the Plan").
//
// It also owns the job's secrets (secrets.go): ${VAR}, ${VAR:-default} and
// $$ in secret fields, their *_file siblings, Spec.Redacted for printing,
// and the security checks a node would otherwise only hit when it starts
// (gossip key size, TLS files, admin and ingest endpoints off loopback
// without credentials). It builds TLS configurations but opens no
// connection.
//
// A job file (see examples/users-domains/job.yaml):
//
//	name: users-domains
//	join: {type: cdc, mode: left, left: {name: users, pk: id, join_on: id}, right: {name: domains, pk: id, join_on: user_id}}
//	sources: [{name: changes, type: file, path: changes.jsonl, tables: {users: left, domains: right}}]
//	sinks: [{type: stdout, format: changelog}, {type: table}]
//	state: {store: embedded}
package job
