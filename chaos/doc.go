// Package chaos holds the fault-injection suite: real joinery node processes
// on loopback and a real redis-server with appendfsync always, a
// deterministic CDC input, faults injected at random moments (kill -9 of a
// node, of the ingesting node, of Redis; the ingesting node killed exactly
// between a state write and its offset commit, by the failpoint of
// internal/failpoint; a SIGSTOP pause; a network partition of an actor
// node, with each node in its own network namespace — that scenario needs
// root and iproute2, and fails without them), and the final joined result
// compared with the fault-free answer.
// It has no code of its own outside tests.
//
//	go test ./chaos/                        # the short version CI runs (3 trials per scenario)
//	CHAOS_TRIALS=20 go test ./chaos/ -v     # make chaos
//
// At the end of the run TestMain prints a summary table, one row per
// scenario trial (events in, output lines, final state equal, rows lost,
// rows written twice under different ids, fenced writes refused, recovery
// time after the fault); CHAOS_OUT=FILE also writes the rows there as JSON.
// Other knobs: CHAOS_CHANGES (input size), CHAOS_KEEP=DIR (copy each fleet's
// files, logs included, there), CHAOS_LOG_LEVEL (the nodes' --log-level),
// CHAOS_PAUSE (the pause scenario's SIGSTOP length), CHAOS_PASSIVATE (the
// passivation scenario's passivate_after; setting it runs that scenario).
package chaos
