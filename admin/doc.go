// Package admin is Joinery's operations surface: the typed status data an
// operator asks a node for (cluster members, where a key lives, a key's full
// state, watermarks and lag, hot keys), the HTTP server that serves it with
// /metrics, /healthz and /readyz, the Prometheus collectors node code updates,
// a typed HTTP Client for that API, and InspectOffline, which decodes a key's
// snapshot straight from a persistence.Store.
//
// admin does not know how a node is built. The node implements Backend (and,
// where it can, the optional Watermarker, Explainer, HotKeys and KeyActions extensions)
// and hands it to NewServer; admin imports neither protoactor nor go-redis
// (InspectOffline takes any persistence.Store).
//
// Sketch of the wiring in a node binary:
//
//	m := admin.NewMetrics()
//	n, _ := node.Start(ctx, spec, node.Options{Metrics: m}) // node calls m.RecordsIn.WithLabelValues(job, src).Inc() etc.
//	ui := console.New(m.Registry(), console.Options{})
//	srv := admin.NewServer(admin.ServerConfig{Addr: ":8081", Token: token, Backend: n.Admin(), Metrics: m, Console: ui, Logger: log})
//	if err := srv.Start(); err != nil { ... }
//	defer srv.Shutdown(ctx)
//
// Routes (JSON; errors are {"error": "..."}):
//
//	GET  /healthz                               200 "ok" while the process lives, or 503 with Liveness.Live's reason
//	GET  /readyz                                200 "ok", or 503 with Backend.Ready's reason
//	GET  /metrics                               the Metrics registry (Prometheus text format)
//	GET  /v1/members                            []Member
//	GET  /v1/jobs/{job}/keys/{key}/location     Location
//	GET  /v1/jobs/{job}/keys/{key}              KeyState
//	GET  /v1/jobs/{job}/keys/{key}/why          Why        (501 without Explainer)
//	GET  /v1/jobs/{job}/watermarks              Watermarks (501 without Watermarker)
//	GET  /v1/jobs/{job}/hot?n=10                []HotKey   (501 without HotKeys)
//	POST /v1/jobs/{job}/keys/{key}/passivate    204        (501 without KeyActions)
//	POST /v1/jobs/{job}/keys/{key}/evict        204        (501 without KeyActions)
//	GET  /ui/                                   the read-only web console's page (ServerConfig.Console, package console): open, no data
//	GET  /ui/api/samples                        the console's samples (console.Samples): the read scope
//	GET  /v1/gossip/keys                        []GossipKey (501 without GossipKeyring)
//	POST /v1/gossip/keys                        204, body GossipKeyChange; needs the token
//	GET  /debug/pprof/...                       only with ServerConfig.Pprof
//
// Access (ServerConfig): bearer tokens of three scopes, each accepted
// wherever a smaller one is (admin ⊇ read ⊇ metrics). /metrics takes any of
// them when MetricsToken is set (open otherwise); the read routes and the
// console's data (/ui/api/) the read or the admin token; the write actions,
// gossip key changes and pprof the admin token only. A known token of too
// small a scope is 403, none or an unknown one 401; "Bearer" is matched
// case-insensitively (internal/bearer). The probes and the console's page
// (HTML, CSS, JavaScript: it asks for the token) are always open. Without
// tokens the reads are open only while the configured address is loopback:
// off loopback Start refuses with ErrInsecure unless Insecure. A key over
// MaxKeyBytes is 414. The http.Server has read-header, read, write and idle
// timeouts.
// docs/operations/security.md has the threat model.
package admin
