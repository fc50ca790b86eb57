package node

import (
	"context"
	"fmt"

	"github.com/joinery/joinery/connectors"
	"github.com/joinery/joinery/connectors/all"
	"github.com/joinery/joinery/job"
)

// startIngest serves spec.Ingest through the registry's ingest endpoint
// (connectors/all.Ingest), appending to the named source's log (its kind's
// Append); refused is called with the reason of each request refused for
// its contents (may be nil).
func startIngest(plan *job.Plan, refused func(source, reason string)) (connectors.Service, error) {
	spec := plan.Spec
	src := plan.IngestSource()
	if src.Kind.Append == nil {
		return nil, fmt.Errorf("ingest.source: %q is not a %s source", src.Name, all.Sources.Where(func(k connectors.SourceKind) bool { return k.Append != nil }))
	}
	app, err := src.Kind.Append(context.Background(), src.Config, connectors.Env{Resolve: spec.Resolve})
	if err != nil {
		return nil, fmt.Errorf("ingest source %s: %w", src.Name, err)
	}
	in := spec.Ingest
	env := connectors.IngestEnv{Source: src.Name, Appender: app, Addr: in.Addr, TLS: plan.IngestTLS, MaxBodyBytes: in.MaxBodyBytes,
		MaxInflight: in.MaxInflight, BodyTimeout: in.BodyTimeout, Token: in.Token}
	if refused != nil {
		env.OnRefused = func(reason string) { refused(src.Name, reason) }
	}
	svc, err := all.Ingest.Start(env)
	if err != nil {
		if c, ok := app.(interface{ Close() error }); ok {
			_ = c.Close()
		}
		return nil, err
	}
	return svc, nil
}
