// Package chaos holds the fault-injection suite: real joinery node processes
// on loopback and a real redis-server with appendfsync always, a
// deterministic CDC input, faults injected at random moments (kill -9 of a
// node, of the node reading the source, of Redis; that node killed exactly
// between a state write and its offset commit, by the failpoint of
// internal/failpoint; a SIGSTOP pause, which always finds a state write on
// its way because that node delays each batch by another failpoint; a network partition of an actor
// node, with each node in its own network namespace — that scenario needs
// root and iproute2, and fails without them; kill -9 of the node reading a
// Redis stream that every node of the fleet has as its source; kill -9 of
// one of three nodes reading a sharded Redis Streams source, whose shard
// leases must move to the survivors, as the Helm chart's default job runs
// them; the state Redis restarted from an older snapshot after the stream
// acknowledged what it lost, or failed over to a lagging replica, which the
// node must re-read, or name as lost when the stream was trimmed; one
// master of a three-master, three-replica Redis Cluster holding the state
// failed over to its lagging replica with CLUSTER FAILOVER TAKEOVER; kill
// -9 of one of two nodes reading a Kafka topic (kfake, in the test
// process) into a Kafka sink with exactly_once, where a read_committed
// consumer must read each output id once), and what an operator does on
// purpose (the state's Redis Cluster grown to four masters and shrunk back
// with redis-cli, and a slot migration held half done; every node of the
// chart's fleet restarted in turn as helm upgrade does; one node on an
// earlier commit's binary, then upgraded), and the final joined result
// compared with the fault-free answer.
// It has no code of its own outside tests.
//
//	go test -count=1 -timeout 20m ./chaos/  # what CI runs: 1-3 trials per scenario, 20,000 changes
//	make chaos  # 200,000 changes; scenario 1 (kill -9 of an actor node) 20 trials, the others 3
//
// The short version takes about ten minutes here, beyond go test's default
// timeout: give it -timeout 20m, as `make test` does.
//
// CHAOS_TRIALS sets the trials of every scenario, CHAOS_KILL_TRIALS those of
// scenario 1 alone. The partition scenario adds up to 4 trials when the ones
// asked for saw no refused write (its pass condition holds per scenario).
//
// At the end of the run TestMain prints a summary table, one row per
// scenario trial (events in, output lines, final state equal, rows lost,
// rows written twice under different ids, fenced writes refused, recovery:
// the time until the output first grew after the fault, and max stall: the
// longest standstill of the output from the fault until the input ended —
// outputs are written in batch order, so a key stuck on a dead node holds
// back all output behind it); CHAOS_OUT=FILE also writes the rows there as
// JSON.
// Each fleet's files (input, outputs, logs, Redis's AOF) live on /dev/shm
// when it exists, or under CHAOS_TMPDIR: Redis still fsyncs every write,
// but a disk's fsync no longer sets the pace. Other knobs: CHAOS_CHANGES
// (input size), CHAOS_KEEP=DIR (copy each fleet's
// files, logs included, there), CHAOS_LOG_LEVEL (the nodes' --log-level),
// CHAOS_PAUSE (the pause scenario's SIGSTOP length), CHAOS_PASSIVATE (the
// passivation scenario's passivate_after; setting it runs that scenario),
// CHAOS_MIXED_FROM (the earlier commit the mixed-version scenario builds
// one node from, 17fa977 by default; the repository must hold it),
// CHAOS_EOS_KILL_AT (the exactly-once scenario's kill point in output
// records; 1 kills while the consumer group forms). The nodes inherit the
// test's environment, so JOINERY_KAFKA_CLIENT_LOG=info adds the Kafka
// client's log to theirs.
//
// The fleets run memberlist's LAN timings (cluster profile lan, the
// default of a real fleet), not the local profile's 200 ms probe timeout
// and single indirect probe: on a loaded two-core machine (CI runs this
// package beside node's tests) the local profile made the healthy nodes
// declare each other dead, which no scenario is about. Failure detection
// takes about five seconds either way (the suspicion timeout shrinks as the
// other nodes confirm it).
package chaos
