package ingest

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/joinery/joinery/connopts/kafkaopts"
)

// KafkaOption configures Kafka.
type KafkaOption interface{ applyKafka(*kafkaOptions) }

type kafkaOptions struct {
	clientID string
	tls      *tls.Config
	sasl     *kafkaopts.SASL
}

type kafkaOpt func(*kafkaOptions)

func (f kafkaOpt) applyKafka(o *kafkaOptions) { f(o) }

// KafkaClientID sets the Kafka client id. Default "joinery".
func KafkaClientID(id string) KafkaOption { return kafkaOpt(func(o *kafkaOptions) { o.clientID = id }) }

// KafkaTLS connects with TLS (the config is cloned). Default: plaintext.
func KafkaTLS(c *tls.Config) KafkaOption { return kafkaOpt(func(o *kafkaOptions) { o.tls = c }) }

// KafkaSASL authenticates with SASL/PLAIN or SCRAM. Default: none.
func KafkaSASL(s *kafkaopts.SASL) KafkaOption {
	return kafkaOpt(func(o *kafkaOptions) { o.sasl = s })
}

// KafkaAppender produces to a Kafka topic with franz-go's idempotent
// producer. It is safe for concurrent use.
type KafkaAppender struct {
	client *kgo.Client
	topic  string
}

var _ Appender = (*KafkaAppender)(nil)

// Kafka returns an Appender that produces each value as one record (no key)
// to topic. It does not connect until the first Append. It fails for no
// brokers, an empty topic or an invalid SASL option.
func Kafka(brokers []string, topic string, opts ...KafkaOption) (*KafkaAppender, error) {
	o := kafkaOptions{clientID: kafkaopts.DefaultClientID}
	for _, opt := range opts {
		opt.applyKafka(&o)
	}
	var errs []error
	if err := kafkaopts.ValidateBrokers(brokers); err != nil {
		errs = append(errs, err)
	}
	if topic == "" {
		errs = append(errs, errors.New("ingest: kafka topic is required"))
	}
	if err := o.sasl.Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	client, err := kgo.NewClient(append(kafkaopts.ClientOptions(brokers, o.clientID, o.tls, o.sasl),
		kgo.DefaultProduceTopic(topic))...)
	if err != nil {
		return nil, fmt.Errorf("ingest: kafka client: %w", err)
	}
	return &KafkaAppender{client: client, topic: topic}, nil
}

// Append produces one record per value and returns once all are
// acknowledged (acks=all). Records without keys are spread by franz-go's
// default (sticky) partitioner, so request order is kept only within each
// partition; use a one-partition topic, or a Redis stream, when all entries
// must stay in order. On error some records may have been produced.
func (a *KafkaAppender) Append(ctx context.Context, values [][]byte) error {
	if len(values) == 0 {
		return nil
	}
	rs := make([]*kgo.Record, len(values))
	for i, v := range values {
		rs[i] = &kgo.Record{Topic: a.topic, Value: v}
	}
	if err := kafkaopts.ProduceSync(ctx, a.client, rs...); err != nil { // ends with ctx, broker or not
		return fmt.Errorf("ingest: produce %d records to %s: %w", len(values), a.topic, err)
	}
	return nil
}

// Close closes the client (records still in flight are failed).
func (a *KafkaAppender) Close() error {
	a.client.Close()
	return nil
}
