// Package fleetbench is the fleet benchmark behind `make bench-fleet`: does
// adding nodes add capacity? It starts real processes — 1, 2, 3 and 4
// `joinery run` nodes, each held to the same CPU share by a cgroup v1 CPU
// quota, a Redis Cluster of three masters as their state store, and a Kafka
// broker (franz-go's kfake) in a process of its own — feeds the nodes a
// partitioned input (a Kafka topic per table read through one consumer
// group, or with -source redis-streams shard streams per table on a
// redis-server of their own, read by a sharded Redis Streams source whose
// leases spread over the fleet), and measures steady-state
// events/s, CPU per event, open-loop p99 event-to-output latency and keys
// per Redis shard, with scaling efficiency = throughput(N) / (N ×
// throughput(1)). With Config.Trickle it runs the trickle row instead: one
// node without a quota, one probe every 10 ms once it is idle, p50/p99/max
// event-to-sink (docs/performance/2026-12-05-fleet.md, "Latency at a trickle").
// docs/performance.md describes the method and the figures.
//
// It owns the benchmark's orchestration (processes, cgroups, the feeder and
// the output consumer), the arithmetic on what it measures (CPU from
// /proc/<pid>/stat, records in from the nodes' /metrics, percentiles,
// efficiency), the JSON report and its plot. It must not be imported by the
// service: it is run by cmd/benchfleet only, it never runs in `make test`
// (its unit tests cover the parsing and arithmetic), and it must not fake
// what it measures: where a part cannot run (no cgroup v1 cpu controller,
// no redis-server) it fails with an error saying so, never falls back to an
// unlimited or in-process stand-in.
//
// The plot uses gonum.org/v1/plot, already the project's chart library
// (cmd/benchplot): pure Go, renders PNG itself.
package fleetbench
