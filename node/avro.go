package node

import (
	"context"

	"github.com/joinery/joinery/formats/debeziumavro"
	"github.com/joinery/joinery/job"
	"github.com/joinery/joinery/sources"
)

// avroDecoder builds the decoder of a debezium-avro source.
func (n *Node) avroDecoder(sp job.SourcePlan) (*debeziumavro.Decoder, error) {
	cl, err := debeziumavro.NewClient(sp.Registry)
	if err != nil {
		return nil, err
	}
	return debeziumavro.NewDecoder(cl, debeziumavro.MaxBytes(sp.RecordLimit())), nil
}

// resolveSchemas fetches the writer schemas of a debezium-avro batch before
// it is decoded. A registry that cannot answer stalls the source, retried
// with backoff like any transient error, for up to retryFor; the records
// are not dead-lettered for it. Unknown ids and bad schemas are the
// records' own fault and rejected when decoded.
func (r *reader) resolveSchemas(ctx context.Context, msgs []sources.Message) error {
	return r.n.retry(ctx, "source "+r.cfg.Name+": schema registry", func(ctx context.Context) error {
		for _, m := range msgs {
			if m.Reject != nil {
				continue // never decoded (dispatch)
			}
			if err := r.avro.Resolve(ctx, m.Value); err != nil {
				return err
			}
		}
		return nil
	})
}
