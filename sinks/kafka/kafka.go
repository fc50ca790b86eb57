package kafka

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/joinery/joinery/connopts/kafkaopts"
	"github.com/joinery/joinery/formats/changelog"
	"github.com/joinery/joinery/formats/debeziumavro"
	"github.com/joinery/joinery/record"
	"github.com/joinery/joinery/sinks"
)

// IDHeader is the record header that carries the output id.
const IDHeader = "id"

// ErrClosed is returned by Write after Close.
var ErrClosed = errors.New("kafka: sink closed")

// SASL authenticates to the brokers (mechanism plain, scram-sha-256 or
// scram-sha-512, user and password).
type SASL = kafkaopts.SASL

// Config configures a Kafka sink. The zero value of an optional field means
// its default.
type Config struct {
	// Brokers are the seed brokers, host:port. Required.
	Brokers []string
	// Topic is the topic written to. It must exist unless the brokers
	// create topics on first use. Required.
	Topic string
	// Format encodes record values. Default changelog.Changelog.
	Format changelog.Format
	// ClientID is the Kafka client id. Default kafkaopts.DefaultClientID.
	ClientID string
	// TLS, when set, connects with TLS. It is cloned, not retained.
	TLS *tls.Config
	// SASL, when set, authenticates with SASL/PLAIN or SCRAM.
	SASL *SASL
	// Avro, when set, writes values as Avro in the Confluent wire format
	// instead of JSON, with a schema registered on start.
	Avro *Avro
	// ExactlyOnce makes the sink write only inside transactions of a
	// transactional Kafka source on the same brokers (WriteTxn; Write
	// refuses): the outputs and the source offsets commit together.
	ExactlyOnce bool
}

// Avro configures Avro values (formats/debeziumavro): the schema of the
// Format's lines (debeziumavro.OutputSchema) is registered under Subject
// when the sink starts, and every value is framed with its id. Keys stay
// the JSON primary key.
type Avro struct {
	// Registry is the Schema Registry. Required.
	Registry debeziumavro.ClientConfig
	// Subject to register under; default TopicNameStrategy, "<topic>-value".
	Subject string
	// Name is the job's name, the schema's namespace (joinery.<name>).
	Name string
	// Columns are the output columns (the job's projection): a row is a
	// record of them; nil: a map.
	Columns []string
}

// Validate reports every problem with c at once, naming each field.
func (c Config) Validate() error {
	var errs []error
	if err := kafkaopts.ValidateBrokers(c.Brokers); err != nil {
		errs = append(errs, err)
	}
	if c.Topic == "" {
		errs = append(errs, errors.New("kafka: Topic is required"))
	}
	if !c.Format.Valid() {
		errs = append(errs, fmt.Errorf("kafka: unknown Format %v", c.Format))
	}
	if err := c.SASL.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Sink produces outputs to a Kafka topic. It is safe for concurrent use,
// though the sinks.Sink contract has one writer at a time.
type Sink struct {
	cfg       Config
	client    *kgo.Client
	avro      *debeziumavro.OutputEncoder // nil: JSON values
	closeOnce sync.Once
	mu        sync.RWMutex // held for reading by Write, for writing by Close
	closed    bool
}

var (
	_ sinks.Sink      = (*Sink)(nil)
	_ sinks.TxnWriter = (*Sink)(nil)
)

// ErrNotInTxn is returned by Write of an exactly-once sink
// (Config.ExactlyOnce): it writes only in a transaction (WriteTxn).
var ErrNotInTxn = errors.New("kafka: an exactly-once sink writes only inside a source's transaction")

// TxnProducer is the transactional producer of an open transaction, which
// WriteTxn writes into: a transactional Kafka source (sources/kafka.Source
// in Transact).
type TxnProducer interface {
	TxnClient() *kgo.Client
	TxnBrokers() []string
}

// New checks cfg, connects (a metadata request to the seed brokers must
// succeed within ctx) and returns a sink. It does not write into cfg.
func New(ctx context.Context, cfg Config) (*Sink, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.ClientID == "" {
		cfg.ClientID = kafkaopts.DefaultClientID
	}
	opts := append(kafkaopts.ClientOptions(cfg.Brokers, cfg.ClientID, cfg.TLS, cfg.SASL),
		kgo.DefaultProduceTopic(cfg.Topic),
		kgo.RequiredAcks(kgo.AllISRAcks()), // the default, and required for idempotence
		// No linger: Write hands over a whole batch and waits for it
		// (ProduceSync), so lingering batches nothing more; it only added
		// franz-go's default 10 ms to every output's latency.
		kgo.ProducerLinger(0),
	)
	client, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("kafka: client: %w", err)
	}
	if err := client.Ping(ctx); err != nil {
		client.Close()
		return nil, fmt.Errorf("kafka: connect to %v: %w", cfg.Brokers, err)
	}
	s := &Sink{cfg: cfg, client: client}
	if cfg.Avro != nil {
		if s.avro, err = registerAvro(ctx, cfg); err != nil {
			client.Close()
			return nil, err
		}
	}
	return s, nil
}

// registerAvro registers the sink's Avro schema and returns its encoder.
func registerAvro(ctx context.Context, cfg Config) (*debeziumavro.OutputEncoder, error) {
	a := cfg.Avro
	subject := a.Subject
	if subject == "" {
		subject = cfg.Topic + "-value"
	}
	text, err := debeziumavro.OutputSchema(cfg.Format, a.Name, a.Columns)
	if err != nil {
		return nil, fmt.Errorf("kafka: %w", err)
	}
	cl, err := debeziumavro.NewClient(a.Registry)
	if err != nil {
		return nil, fmt.Errorf("kafka: %w", err)
	}
	id, err := cl.RegisterSchema(ctx, subject, sr.Schema{Schema: text, Type: sr.TypeAvro}, -1, -1)
	if err != nil {
		return nil, fmt.Errorf("kafka: register the Avro schema under subject %s: %w", subject, err)
	}
	enc, err := debeziumavro.NewOutputEncoder(cfg.Format, text, id)
	if err != nil {
		return nil, fmt.Errorf("kafka: %w", err)
	}
	return enc, nil
}

// Write produces one record per output the format does not skip, in batch
// order, and returns once all of them are acknowledged (acks=all), or the
// first error. An output that cannot be encoded fails the batch before
// anything is sent. If producing fails, some records may have been written;
// a retry writes them again (readers dedupe by the "id" header).
func (s *Sink) Write(ctx context.Context, batch []record.Output) error {
	if s.cfg.ExactlyOnce {
		return ErrNotInTxn
	}
	rs, err := s.records(batch)
	if err != nil {
		return err
	}
	return s.produce(ctx, s.client, rs)
}

// WriteTxn produces batch as Write does, into the open transaction tx (a
// TxnProducer on the sink's brokers): the records are visible to a
// read_committed consumer once the transaction commits, and never if it
// aborts.
func (s *Sink) WriteTxn(ctx context.Context, tx any, batch []record.Output) error {
	cl, err := s.txnClient(tx)
	if err != nil {
		return err
	}
	rs, err := s.records(batch)
	if err != nil {
		return err
	}
	return s.produce(ctx, cl, rs)
}

// txnClient is tx's transactional producer, checked to write to the
// sink's brokers.
func (s *Sink) txnClient(tx any) (*kgo.Client, error) {
	p, ok := tx.(TxnProducer)
	if !ok {
		return nil, fmt.Errorf("kafka: sink %s: %T is no Kafka transaction", s.cfg.Topic, tx)
	}
	if !SameBrokers(p.TxnBrokers(), s.cfg.Brokers) {
		return nil, fmt.Errorf("kafka: sink %s: a transaction on brokers %v cannot write to brokers %v", s.cfg.Topic, p.TxnBrokers(), s.cfg.Brokers)
	}
	return p.TxnClient(), nil
}

// SameBrokers reports whether a and b list the same seed brokers (in any
// order): one cluster, as a transaction needs.
func SameBrokers(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	x, y := slices.Clone(a), slices.Clone(b)
	slices.Sort(x)
	slices.Sort(y)
	return slices.Equal(x, y)
}

// records encodes batch (see Write).
func (s *Sink) records(batch []record.Output) ([]*kgo.Record, error) {
	rs := make([]*kgo.Record, 0, len(batch))
	for _, o := range batch {
		var line []byte
		var ok bool
		var err error
		if s.avro != nil {
			line, ok, err = s.avro.Encode(o)
		} else {
			line, ok, err = s.cfg.Format.Marshal(o)
		}
		if err != nil {
			return nil, fmt.Errorf("kafka: %w", err)
		}
		if !ok {
			continue
		}
		r := &kgo.Record{
			Topic:   s.cfg.Topic,
			Value:   line,
			Headers: []kgo.RecordHeader{{Key: IDHeader, Value: []byte(o.ID)}},
		}
		if o.PK != "" {
			r.Key = []byte(o.PK)
		}
		if s.cfg.Format == changelog.Upsert && o.Kind == record.Delete {
			r.Value = nil // tombstone
		}
		rs = append(rs, r)
	}
	return rs, nil
}

// Message is a record Produce writes as it is: the dead-letter output uses
// it for records that are not join outputs.
type Message struct {
	Key, Value []byte
	// Headers are key, value pairs.
	Headers [][2]string
}

// Produce writes msgs to the topic in order and returns once all of them
// are acknowledged (acks=all), or the first error.
func (s *Sink) Produce(ctx context.Context, msgs []Message) error {
	return s.produce(ctx, s.client, messages(s.cfg.Topic, msgs))
}

// ProduceTxn writes msgs as Produce does, into the open transaction tx
// (see WriteTxn).
func (s *Sink) ProduceTxn(ctx context.Context, tx any, msgs []Message) error {
	cl, err := s.txnClient(tx)
	if err != nil {
		return err
	}
	return s.produce(ctx, cl, messages(s.cfg.Topic, msgs))
}

func messages(topic string, msgs []Message) []*kgo.Record {
	rs := make([]*kgo.Record, 0, len(msgs))
	for _, m := range msgs {
		r := &kgo.Record{Topic: topic, Key: m.Key, Value: m.Value}
		for _, h := range m.Headers {
			r.Headers = append(r.Headers, kgo.RecordHeader{Key: h[0], Value: []byte(h[1])})
		}
		rs = append(rs, r)
	}
	return rs
}

func (s *Sink) produce(ctx context.Context, cl *kgo.Client, rs []*kgo.Record) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return ErrClosed
	}
	if len(rs) == 0 {
		return nil
	}
	// The wait ends with ctx even when the broker is gone (see
	// kafkaopts.ProduceSync); Close fails the records left in flight.
	if err := kafkaopts.ProduceSync(ctx, cl, rs...); err != nil {
		return fmt.Errorf("kafka: produce %d records to %s: %w", len(rs), s.cfg.Topic, err)
	}
	return nil
}

// Close waits for any Write in progress (a Write ends with its context),
// closes the client — which fails the records still in flight — and is
// idempotent.
func (s *Sink) Close() error {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closed = true
		s.mu.Unlock()
		s.client.Close()
	})
	return nil
}
