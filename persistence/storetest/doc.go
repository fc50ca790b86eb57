// Package storetest is the conformance suite every persistence.Store passes.
//
// An implementation's test calls Run with a function that opens a fresh,
// empty store for one subtest:
//
//	func TestStoreConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) persistence.Store {
//			s, err := embedded.New(embedded.Options{})
//			if err != nil {
//				t.Fatal(err)
//			}
//			return s
//		})
//	}
//
// Run closes every store it opens when the subtest ends (Close is idempotent,
// so open may also register its own cleanup). A store whose data outlives
// Close (a file, a server) passes WithReopen as well, which enables the
// subtests about durability across reopening; without it they are skipped.
// The Timers* subtests cover the timer index (Snapshot.HasTimer,
// Store.DueTimers): it follows saves and deletes, orders by time then key,
// isolates jobs, ignores fenced snapshots and, with WithReopen, survives
// reopening. The Parts* subtests cover incremental writes
// (Snapshot.Parts and Delta): a delta then a Load gives what the whole
// snapshot would (packed), a whole snapshot replaces every part, an empty
// State deletes parts and all, deltas apply in batch order, are fenced and
// move the timer index like whole ones, survive reopening and, with
// WithRollback, are refused by a store gone back in time; LoadMany and
// AcquireLoadMany check persistence.LoadMany and AcquireLoadMany (the
// optional BatchLoader and Activator, or their fallbacks). The Owned*
// subtests cover who owns a saved snapshot's memory (Snapshot.Owned): a
// copying Save leaves the caller's buffers the caller's, and Owned saves
// round-trip, fence and index like copied ones. The suite checks the contract
// written on persistence.Store and nothing implementation-specific; tests of
// durability across restarts, round trips and faults belong to each
// implementation (redisstore, for one, runs the suite on one server and on
// a real three-master Redis Cluster, and tests slot migration under writes
// itself). Run the suite with -race: one subtest drives a store from
// several goroutines.
//
// The package imports testing and is meant for _test.go files only.
package storetest
