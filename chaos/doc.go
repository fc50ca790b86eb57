// Package chaos holds the fault-injection suite: real joinery node processes
// on loopback and a real redis-server with appendfsync always, a
// deterministic CDC input, faults injected at random moments (kill -9 of a
// node, of the ingesting node, of Redis), and the final joined result compared
// with the fault-free answer. It has no code of its own outside tests.
//
//	go test ./chaos/                        # the short version CI runs (3 trials per scenario)
//	CHAOS_TRIALS=20 go test ./chaos/ -v     # make chaos
package chaos
