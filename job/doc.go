// Package job owns the job file: the YAML spec that names a job's sources, its
// join, its sinks, its state store and its cluster settings, and Validate,
// which reports every bad field by its path before a node starts. The
// connector-specific fields of a source, sink or dead-letter entry are
// validated by that type's registry kind (connectors/all), so job knows no
// connector type by name.
//
// Compile (plan.go) is the only compiler of a job: it reports every bad
// field and returns the Plan a node wires (the join as the key core's
// machine spec, key expressions, compiled filters, watermark settings,
// sinks' formats, TLS built, addresses split, defaults applied). Validate is
// Compile with the Plan dropped; a node compiles nothing itself
// (docs/architecture.md, "Compile once: the Plan").
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
