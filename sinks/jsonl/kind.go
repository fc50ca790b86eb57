package jsonl

import (
	"context"

	"github.com/joinery/joinery/connectors"
	"github.com/joinery/joinery/sinks"
)

// Entry is the configuration of a file sink in a job file.
type Entry struct {
	Path string `yaml:"path"`
}

// Validate reports a missing path.
func (e *Entry) Validate(v *connectors.Validator) { v.Require("path", e.Path != "") }

// Stdout and File are the stdout and file sinks' registry entries
// (connectors/all).
var (
	Stdout = connectors.SinkKind{
		Type: "stdout",
		New:  func() connectors.Config { return connectors.None{} },
		Open: func(_ context.Context, _ connectors.Config, env *connectors.SinkEnv) (sinks.Sink, error) {
			return New(env.Stdout, env.Format), nil
		},
	}
	File = connectors.SinkKind{
		Type: "file",
		New:  func() connectors.Config { return new(Entry) },
		Open: func(_ context.Context, c connectors.Config, env *connectors.SinkEnv) (sinks.Sink, error) {
			path := env.Resolve(c.(*Entry).Path)
			s, err := Create(path, env.Format)
			if err == nil && s.Cut() > 0 {
				env.Logger().Warn("file sink: cut a partial last line off the file (a write cut short by a kill; its outputs are written again)", "path", path, "bytes", s.Cut())
			}
			return s, err
		},
	}
)
