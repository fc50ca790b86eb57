// Package kafka is the Kafka source: it reads one topic as a member of a
// consumer group and commits offsets only once Joinery says the records are
// durable in state.
//
// It owns the consumer-group membership, the mapping of Kafka records to
// positions (Position.Source = Config.Name, Partition = the Kafka partition,
// Offset = the record offset) and the commit protocol. It also holds the
// connection options (brokers, TLS, SASL) shared with the Kafka sink and the
// Kafka ingest appender. franz-go types stay inside the Kafka packages.
//
// Why franz-go (github.com/twmb/franz-go): the Kafka client made for the job:
// pure Go, consumer groups, idempotent producer, in-process kfake for tests.
//
// # Guarantees
//
// Delivery is at least once. Autocommit is off: an offset is committed only
// by Commit, for positions the caller made durable, as the position's offset
// + 1 with the record's leader epoch, in a synchronous OffsetCommit of the
// group's current generation. A partition is committed only while this member
// owns it and only for offsets delivered during that ownership. When the
// group revokes a partition (rebalance, another member joined or left), the
// revoke first waits, up to Config.RevokeWait (kafka.revoke_wait,
// DefaultRevokeWait; under the group's RebalanceTimeout), for the
// records already delivered from it to be committed — the caller's batches
// in flight complete and Commit them — so its new owner resumes after them.
// Past that bound, or when a partition is lost (session expired, fenced:
// nothing can be committed), Commit skips it from then on and the records
// after the partition's last committed offset are delivered again to its
// new owner, which may be this member again. Records are never skipped;
// duplicates are expected after lost partitions, slow revokes and
// restarts, and Joinery drops them by position.
//
// # Transactions
//
// With Config.TransactionalID (a job with an exactly-once Kafka sink) the
// source is transactional (sources.Transactional, txn.go): its client is
// franz-go's GroupTransactSession with that transactional id, it reads
// read_committed, and its offsets are committed only by Transact, in the
// transaction that carries the outputs the node writes into it — the
// offsets named, not everything polled — fenced by the group's generation.
// A rebalance that revokes partitions aborts the transaction in progress
// instead of waiting (RevokeWait does not apply); an aborted transaction
// rewinds the partitions still owned to their committed offsets and bumps
// Epoch, which every Message carries, so the node drops what it read before
// (docs/guides/exactly-once.md). A transaction's end waits for a rebalance
// in progress to complete (up to RebalanceTimeout, by which the group
// removes a member that did not rejoin), so the transaction timeout (DefaultTxnTimeout)
// outlasts the writes and that end: a live member's transaction is
// aborted by the group's generation, never by the brokers' timeout.
//
// A join or sync that fails (kgo.ErrGroupSession: it outlasted its timeout
// while the group waited for a dead member, or the member was removed) is
// a transient Read error: the client joins again, and the node retries.
//
// # Key groups
//
// With Config.KeyGroups (sources[].partitioned_by: join_key) the topic is
// keyed by the join column and its partitions are the job's key groups:
// the group is balanced by KeyGroupBalancer (partition p to the member
// streamshard.Assign names for group p, the member names carried in the
// group metadata), the key group of a join key is KeyGroup (Kafka's
// default partitioner over the key bytes a partition_key template
// rebuilds), and a record that is not in its key's partition is delivered
// with a sources.Reject (reason misplaced, a *MisplacedError): the node
// dead-letters it and the partition is read on (docs/concepts/key-groups.md, "Key
// groups").
//
// With Config.Expect (cluster.expect) the source joins its group only once
// Config.Members lists that many live members, or Config.ExpectWait has
// passed, so that a fleet started together forms its group at once.
//
// Close leaves the group, so the remaining members take over its partitions
// at once; anything it did not commit is re-read by them.
//
// Usage:
//
//	src, err := kafka.New(ctx, kafka.Config{Brokers: []string{"localhost:9092"},
//		Topic: "users", Group: "joinery"})
//	defer src.Close()
//	msgs, err := src.Read(ctx, 512) // blocks until records arrive
//	…
//	err = src.Commit(ctx, []record.Position{msgs[len(msgs)-1].Pos})
package kafka
