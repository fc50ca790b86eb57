// Package cluster is Joinery's cluster membership: a protoactor-go
// cluster.ClusterProvider built on hashicorp/memberlist gossip
// (protoactor-go ships none), the member list the admin CLI reports, and
// the fleet's security at the membership and remoting layers.
//
// It owns: the memberlist instance of a node (gossip, failure detection,
// optional encryption and fleet label), translating memberlist membership
// into protoactor topology (MemberList.UpdateClusterTopology), the dead
// verdicts that tell a wrongly declared node to restart, and the gossip
// keyring and remote TLS options.
// It does not place keys: which member hosts a key actor is the identity
// lookup's decision (actors.Lookup with the Placement node/ chooses:
// rendezvous per key, or key groups that follow the source shards), over
// the topology this package publishes.
// It must not: hold join state, talk to the store, or leak memberlist or
// protoactor types beyond this package and actors/ — except the protoactor
// remote options RemoteOptions hands to node/, which builds the remote (see
// docs/concepts/architecture.md, "Layers").
//
// # How membership flows
//
// Each node gossips a small JSON meta {id, host, port, kinds} (its actor
// system ID, protoactor remote address and cluster kinds), plus its start
// time and live key actor count (Config.KeysActive, regossipped when it
// changed, at most every StatsInterval) for MemberInfo. memberlist's
// join/leave/update events are copied into the Provider's view and a
// single goroutine owned by the Provider publishes the full live member
// list to protoactor after each change. Seeds that are not up yet are
// retried in the background with backoff, so nodes may start in any order.
//
// # Security
//
// Gossip is encrypted and verified when Config.SecretKey is set: memberlist
// drops whatever it cannot decrypt with a key of the keyring, so only key
// holders are members. Provider.ChangeGossipKey rotates the keyring at run
// time (install, use, remove; each on every node before the next), and
// Config.ExtraKeys carries a rotation across restarts. New refuses a
// non-loopback BindAddr without a key unless Config.Insecure
// (ExposureError); CheckRemoteExposure is the same rule for remoting, and
// RemoteOptions gives protoactor's remote the mutual-TLS gRPC credentials
// (RemoteTLS: both sides verify the peer against the fleet CA, files
// re-read when they change). A dead list counts against a node only with
// a strict majority of its live peers behind it (trustDeclarations), so
// one rogue member cannot make a node restart.
//
// # Wiring
//
//	system := actor.NewActorSystem()
//	provider, err := cluster.New(cluster.Config{
//		BindAddr: "10.0.0.5", BindPort: 7946,
//		Seeds:    []string{"10.0.0.4:7946"},
//		Label:    "joinery-prod",
//	})
//	if err != nil { ... }
//	remoteCfg := remote.Configure("10.0.0.5", 8090)
//	cfg := protocluster.Configure("joinery", provider, actors.NewLookup(nil), remoteCfg,
//		protocluster.WithKinds(protocluster.NewKind("join", props)))
//	c := protocluster.New(system, cfg)
//	c.StartMember() // panics if the provider fails to start (protoactor)
//	defer func() {
//		c.Shutdown(true)            // calls provider.Shutdown(true) itself
//		_ = provider.Shutdown(true) // idempotent; required after c.Shutdown(false)
//	}()
//	res, err := c.Request("key-42", "join", msg)
//
// provider.GossipAddr gives this node's gossip address (to hand to other
// nodes as a seed); provider.Members lists the fleet for the admin CLI.
//
// A graceful Shutdown first gossips a "leaving" flag in the node meta, so
// peers drop the node from placement at once and later report it as left
// rather than dead (memberlist's own Node.State cannot tell them apart),
// then leaves and stops memberlist.
//
// Caveats of protoactor-go (v0.0.0-20240822202345) that callers must know:
//   - Cluster.StartMember panics on a provider error, then sleeps 1 s.
//   - Cluster.Shutdown(true) shuts the actor system down before the
//     provider, calls IdentityLookup.Shutdown twice and sleeps 2 s.
//     Cluster.Shutdown(false) never calls the provider's Shutdown (call it
//     yourself) nor stops protoactor's gossip.
//   - MemberList.Members and Length read without the list's lock; observe
//     the topology through *cluster.ClusterTopology events on the actor
//     system's EventStream instead.
//   - A member that left or was declared dead is blocked forever by its
//     ID. A restarted process gets a new ID, so restarts are fine, but a
//     node wrongly declared dead (a long pause, a partition) stays out of
//     placement until it restarts, although memberlist lists it alive
//     again. The Provider therefore gossips the IDs it saw die
//     (nodeMeta.Dead) and leaves them out of the topology it publishes.
//     From those lists every node works out the same smallest set of nodes
//     whose restart ends every such block (restartSet: the cut-off side of
//     a partition, whichever way the declarations went); a node in it
//     reports DeclaredDead (the node's /healthz then fails, and its
//     supervisor restarts it) — at once when a strict majority of its live
//     peers declared it dead, else only after the verdict held for
//     Config.MinorityConfirm, so a healing partition's view in flux never
//     restarts a majority node (see Provider.confirmRestart); a node that
//     reported gossips it, and its dead list no longer counts. memberlist
//     never contacts a dead node again, so the Provider also rejoins,
//     every ReconnectInterval, the members it saw die: without that the
//     two sides of a healed partition would stay split for good.
//   - protoactor has data races under -race: Remote.Start sets gRPC's
//     global logger (several nodes per process), BlockList reads without
//     its lock, Remote.Shutdown races its endpoint manager, and disthash
//     swaps its Rendezvous unsynchronised. The tests of this package
//     therefore run the request round trips only without -race.
package cluster
