// Package cluster is Joinery's cluster membership and placement: a
// protoactor-go cluster.ClusterProvider built on hashicorp/memberlist
// gossip (protoactor-go ships none), and the rendezvous placement the admin
// CLI reports.
//
// It owns: the memberlist instance of a node (gossip, failure detection,
// optional encryption and fleet label), translating memberlist membership
// into protoactor topology (MemberList.UpdateClusterTopology), and Owner.
// It must not: hold join state, talk to the store, or leak memberlist or
// protoactor types beyond this package and actors/ (see STYLE.md §2).
//
// # How membership flows
//
// Each node gossips a small JSON meta {id, host, port, kinds} (its actor
// system ID, protoactor remote address and cluster kinds). memberlist's
// join/leave/update events are copied into the Provider's view and a
// single goroutine owned by the Provider publishes the full live member
// list to protoactor after each change. Seeds that are not up yet are
// retried in the background with backoff, so nodes may start in any order.
//
// # Placement
//
// protoactor's disthash identity lookup places an identity of a kind on the
// rendezvous (highest-random-weight) winner among the live members hosting
// that kind, hashing the identity with each member's remote address.
// Owner exposes that same function (it calls protoactor's Rendezvous), and
// Provider.OwnerOf answers it for the current view.
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
//	cfg := protocluster.Configure("joinery", provider, disthash.New(), remoteCfg,
//		protocluster.WithKinds(protocluster.NewKind("join", props)))
//	c := protocluster.New(system, cfg)
//	c.StartMember() // panics if the provider fails to start (protoactor)
//	defer func() {
//		c.Shutdown(true)        // also calls provider.Shutdown(true)
//		_ = provider.Shutdown(true) // needed after c.Shutdown(false); idempotent
//	}()
//	res, err := c.Request("key-42", "join", msg)
//
// provider.GossipAddr gives this node's gossip address (to hand to other
// nodes as a seed); provider.Members lists the fleet for the admin CLI.
//
// Caveats of protoactor-go (v0.0.0-20240822202345) that callers must know:
// Cluster.StartMember panics on a provider error and then sleeps 1 s;
// Cluster.Shutdown(true) sleeps 2 s; Cluster.Shutdown(false) never calls
// the provider's Shutdown (call it yourself); MemberList.Members and
// Length read without the list's lock, so observe the topology through
// *cluster.ClusterTopology events on the actor system's EventStream
// instead; and a member that left is blocked forever by its ID (a
// restarted process gets a new ID, so this is harmless for restarts).
package cluster
