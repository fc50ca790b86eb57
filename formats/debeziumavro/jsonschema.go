package debeziumavro

import (
	"github.com/joinery/joinery/formats/debezium"
	"github.com/joinery/joinery/record"
)

// DecodeJSONSchema decodes a Debezium event written by Confluent's
// JsonSchemaConverter: the Confluent header (magic 0, schema id) and then
// Debezium JSON, which formats/debezium decodes as it is. The schema is not
// needed to read JSON, so it is not fetched (no registry I/O). An empty
// value is debezium.ErrTombstone; a value without the header is
// bad-header; the rest is debezium.DecodeEnvelope's.
func DecodeJSONSchema(value []byte, pos record.Position) (debezium.Envelope, error) {
	if len(value) == 0 {
		return debezium.Envelope{}, debezium.ErrTombstone
	}
	_, payload, err := schemaID(value, pos)
	if err != nil {
		return debezium.Envelope{}, err
	}
	return debezium.DecodeEnvelope(payload, pos)
}
