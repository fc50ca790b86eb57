package file

import (
	"context"
	"fmt"

	"github.com/joinery/joinery/connectors"
	"github.com/joinery/joinery/record"
	"github.com/joinery/joinery/sources"
)

// Entry is the configuration of a file source in a job file.
type Entry struct {
	// Path is the file to read; "-" is stdin.
	Path string `yaml:"path"`
}

// Validate reports a missing path.
func (e *Entry) Validate(v *connectors.Validator) {
	if e.Path == "" {
		v.Bad("path", "must be set for a file source (\"-\" for stdin)")
	}
}

// Kind is the file source's registry entry (connectors/all): it resumes
// after the job's committed offset of the file.
var Kind = connectors.SourceKind{
	Type: "file",
	New:  func() connectors.Config { return new(Entry) },
	Open: func(ctx context.Context, c connectors.Config, env *connectors.SourceEnv) (sources.Source, error) {
		e := c.(*Entry)
		committed, err := env.Committed(ctx)
		if err != nil {
			return nil, fmt.Errorf("committed offsets: %w", err)
		}
		start := committed[record.Position{Source: env.Name}.PartitionID()]
		// A line over the record limit is cut one byte past it, so it is
		// rejected as too-large.
		fc := Config{Name: env.Name, Path: env.Resolve(e.Path), StartAfter: start, MaxLineBytes: env.RecordLimit + 1}
		if e.Path == "-" {
			fc.Reader = env.Stdin
		}
		return New(fc)
	},
}
