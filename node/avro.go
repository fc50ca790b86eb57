package node

import (
	"context"

	"github.com/joinery/joinery/connectors"
	"github.com/joinery/joinery/formats/debeziumavro"
	"github.com/joinery/joinery/job"
	"github.com/joinery/joinery/sources"
)

// avroDecoder builds the decoder of a debezium-avro source.
func (n *Node) avroDecoder(cfg job.Source) (*debeziumavro.Decoder, error) {
	cc, err := n.spec.RegistryClientConfig(cfg.SchemaRegistry)
	if err != nil {
		return nil, err
	}
	cl, err := debeziumavro.NewClient(cc)
	if err != nil {
		return nil, err
	}
	return debeziumavro.NewDecoder(cl, debeziumavro.MaxBytes(cfg.RecordLimit())), nil
}

// resolveSchemas fetches the writer schemas of a debezium-avro batch before
// it is decoded. A registry that cannot answer stalls the source, retried
// with backoff like any transient error, for up to retryFor; the records
// are not dead-lettered for it. Unknown ids and bad schemas are the
// records' own fault and rejected when decoded.
func (r *reader) resolveSchemas(ctx context.Context, msgs []sources.Message) error {
	return r.n.retry(ctx, "source "+r.cfg.Name+": schema registry", func(ctx context.Context) error {
		for _, m := range msgs {
			if err := r.avro.Resolve(ctx, m.Value); err != nil {
				return err
			}
		}
		return nil
	})
}

// sinkAvro is the Avro setting of a kafka sink with encoding avro, nil
// for JSON.
func sinkAvro(spec *job.Spec, s job.Sink) (*connectors.Avro, error) {
	if s.Encoding != job.EncodingAvro {
		return nil, nil
	}
	cc, err := spec.RegistryClientConfig(s.SchemaRegistry)
	if err != nil {
		return nil, err
	}
	var cols []string // a CDC join's rows have exactly the projected columns; else a map
	for _, c := range spec.Join.Project {
		if !spec.Timed() {
			cols = append(cols, c.Name)
		}
	}
	return &connectors.Avro{Registry: cc, Subject: s.Subject, Name: spec.Name, Columns: cols}, nil
}
