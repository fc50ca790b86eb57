// Package capbench is the capacity benchmark behind `make bench-capacity`:
// what one join key of the seed's users ⋈ domains join costs in Redis, and
// in a node's heap while it is live, the figures a state store is sized by.
// It is a benchmark, not a test: it prints figures and checks none.
//
// Workload: internal/cdcgen's users and domains history, one user to three
// domains (Config.Changes/4 user ids, three times as many domain ids; a
// snapshot of half of each, then Config.Changes inserts, updates, moves and
// deletes), as Debezium JSON lines in a file, each change with a Postgres
// log position (source.lsn, which the node keeps per row to drop replayed
// changes, as it would from a real connector), read by one node in process
// (node.Start: a cluster of one, key actors, write-behind) with
// state.store: redis on a redis-server started on a free loopback port
// (persistence off), running the seed's query: users INNER JOIN domains on
// users.id = domains.user_id projecting user_id, firstname, lastname and
// domain_name, to a changelog sink that discards its output. Two variants:
// narrow (the seed's columns: users id, firstname, lastname; domains id,
// user_id, domain_name) and wide (ten more string columns per row,
// extra_column_01 to extra_column_10, of 24 bytes each: cdcgen's
// Config.Pad, which the job never reads).
//
// Each variant gets a fresh redis-server, whose used_memory is read before
// the node starts (the baseline) and again after node.Run has read all of
// its input and node.Close has flushed every pending write and passivated
// every key: Redis then holds every key's state. The figures:
//
//   - used_memory minus the baseline, per live join key (a key holding at
//     least one row of the final tables: a user id with its user or a
//     domain pointing at it) and per stored row (users and domains rows of
//     the final tables);
//   - DBSIZE per live join key, and every key's TYPE, OBJECT ENCODING and
//     MEMORY USAGE (SAMPLES 0, exact), summed per kind of key and per join
//     key. The store names a key "<prefix>:{<tag>}:<kind>:<join key>" when it
//     belongs to a join key and "<prefix>:{<tag>}:<kind>" when it belongs to
//     a slot group or the job (persistence/redisstore's doc), so the kinds
//     are whatever the store writes. Per join key: the quantiles of its
//     keys' MEMORY USAGE summed (median, p90, p99, maximum), and the keys of
//     the median and the largest join key one by one (a hash's listpack or
//     hashtable encoding shows there);
//   - the node's heap per live key: HeapAlloc after a GC at the end of
//     node.Run minus HeapAlloc after a GC before it (the node started, the
//     input written to its file and dropped), over the key actors active
//     then;
//   - what the rows would take as JSON: per join key, the projected columns
//     the stored rows supply, as the output's JSON objects ({"user_id":…,
//     "firstname":…,"lastname":…} per user, {"domain_name":…} per domain),
//     and the whole rows (the Debezium after-images).
//
// The figures measure whatever key layout and row encoding the store and
// the node have: the benchmark reads Redis, never the store's format. It is
// run by cmd/benchcapacity; its smoke test (a small input) runs in the
// default suite.
package capbench
