package admin

import (
	"context"
	"errors"
)

// ErrNotFound is what a Backend returns (possibly wrapped) for an unknown job
// or key. The server answers it with 404 and the CLI exits with 3.
var ErrNotFound = errors.New("admin: not found")

// Backend is what a node provides to the admin server: the status functions
// behind the /v1 routes and readiness.
//
// The server calls every method concurrently, from HTTP handler goroutines,
// with a context that carries the request's deadline (ServerConfig.Timeout);
// a method must honour it rather than block past it. Slices and maps returned
// belong to the caller, which only reads them (to encode them).
//
// Errors: a wrapped ErrNotFound becomes 404; errors.ErrUnsupported becomes
// 501; context.DeadlineExceeded becomes 504; anything else 500 with the
// error's text. Extensions a Backend does not implement (Watermarker, Explainer,
// HotKeys, KeyActions) answer 501.
type Backend interface {
	// Members returns the cluster members this node sees, itself included
	// (Self set).
	Members(ctx context.Context) ([]Member, error)
	// Locate says which member owns key of job and whether its actor is
	// active. It must not activate the key. ErrNotFound for an unknown job.
	Locate(ctx context.Context, job, key string) (Location, error)
	// Inspect returns the live state of key of job, asking the member that
	// holds it. ErrNotFound for an unknown job, and for a key without any
	// state; Inspect must not create durable state.
	Inspect(ctx context.Context, job, key string) (KeyState, error)
	// Ready returns nil when the node can take traffic (it joined the
	// cluster, its store is reachable and its sources are assigned), and
	// otherwise an error whose text says why not. It is polled by probes,
	// so it must be cheap.
	Ready(ctx context.Context) error
}

// Liveness is implemented by a Backend that can tell when its process must be
// restarted although it still runs. /healthz answers 503 with Live's reason
// then (so a Kubernetes liveness probe restarts the pod), and 200 otherwise.
type Liveness interface {
	// Live returns nil while the node is healthy, or why it needs a
	// restart (e.g. its peers declared it dead and no longer place keys on
	// it). It is polled by probes, so it must be cheap.
	Live(ctx context.Context) error
}

// Watermarker is implemented by a Backend that tracks event-time watermarks.
type Watermarker interface {
	// Watermarks returns the per-partition watermarks of job on this node,
	// and the job's combined (global) watermark. ErrNotFound for an unknown
	// job.
	Watermarks(ctx context.Context, job string) ([]Watermark, int64, error)
}

// Explainer is implemented by a Backend that can say what a key waits for.
type Explainer interface {
	// Why explains what key of job is waiting for. ErrNotFound for an
	// unknown job or a key without state.
	Why(ctx context.Context, job, key string) (Why, error)
}

// HotKeys is implemented by a Backend that keeps a top-k of busy keys.
type HotKeys interface {
	// Hot returns at most n of job's busiest keys, busiest first (n >= 1).
	// ErrNotFound for an unknown job.
	Hot(ctx context.Context, job string, n int) ([]HotKey, error)
}

// KeyActions is implemented by a Backend whose keys can be acted on. Both
// are write actions: the server only allows them with a configured token.
type KeyActions interface {
	// Passivate makes key's actor persist its state and stop; the next event
	// activates it again from the store. ErrNotFound when the job is unknown
	// or the key is not active.
	Passivate(ctx context.Context, job, key string) error
	// Evict drops key's actor without persisting what it has not written
	// yet, so it reloads from the last durable snapshot (a repair tool).
	// ErrNotFound when the job is unknown or the key is not active.
	Evict(ctx context.Context, job, key string) error
}
