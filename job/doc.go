// Package job owns the job file: the YAML spec that names a job's sources, its
// join, its sinks, its state store and its cluster settings, and Validate,
// which reports every bad field by its path before a node starts.
//
// A job file (see examples/users-domains/job.yaml):
//
//	name: users-domains
//	join: {type: cdc, mode: left, left: {name: users, pk: id, join_on: id}, right: {name: domains, pk: id, join_on: user_id}}
//	sources: [{name: changes, type: file, path: changes.jsonl, tables: {users: left, domains: right}}]
//	sinks: [{type: stdout, format: changelog}, {type: table}]
//	state: {store: embedded}
package job
