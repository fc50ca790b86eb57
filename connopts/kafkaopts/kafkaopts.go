// Package kafkaopts is the Kafka client every Kafka user of Joinery
// shares: Config, the kafka block of a job file (brokers, topic, group,
// client id, SASL, TLS), SASL, and ClientOptions, the franz-go options that
// connect (the Kafka source and sink, the dead-letter topic, HTTP ingest),
// and ProduceSync, the producers' wait that ends with its context.
// A sink no longer imports the source for them. It imports franz-go's kgo
// and sasl packages for ClientOptions.
//
// It must not open a connection by itself or know what is produced or
// consumed.
package kafkaopts

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
	"gopkg.in/yaml.v3"

	"github.com/joinery/joinery/connopts"
)

// DefaultClientID is the Kafka client id when none is set.
const DefaultClientID = "joinery"

// Config is a Kafka cluster and topic, as a job file names them.
type Config struct {
	Brokers []string `yaml:"brokers"`
	Topic   string   `yaml:"topic"`
	// Group is the consumer group of a kafka source.
	Group string `yaml:"group"`
	// StartOffset is where a group without committed offsets starts: earliest (default) or latest.
	StartOffset string `yaml:"start_offset"`
	ClientID    string `yaml:"client_id"`
	// RevokeWait, on a kafka source, bounds how long a rebalance that
	// takes partitions from the member waits for the records already
	// delivered from them to be committed (sources/kafka.Config.RevokeWait;
	// 0: its default, 10s).
	RevokeWait time.Duration `yaml:"revoke_wait,omitempty"`
	// PartitionKey, on a source partitioned by the join key
	// (partitioned_by: join_key), is the record key a producer writes for a
	// join key: {key} stands for the key as a JSON value (`5`, `"eu"`),
	// {text} for its text. `{"user_id":{key}}` is Debezium's JSON key with
	// message.key.columns set to the join column user_id and key schemas
	// off. Key actors are placed by the partition Kafka's default
	// partitioner gives these bytes (sources/kafka.KeyGroup).
	PartitionKey string `yaml:"partition_key,omitempty"`
	// ExactlyOnce, on a kafka sink, writes its outputs in Kafka
	// transactions that also commit the kafka sources' offsets, so that a
	// read_committed consumer sees each output once (docs/guides/exactly-once.md).
	ExactlyOnce bool `yaml:"exactly_once,omitempty"`
	// SASL, when Mechanism is set: plain, scram-sha-256 or scram-sha-512. Password: ${VAR} is expanded.
	SASL struct {
		Mechanism string `yaml:"mechanism"`
		User      string `yaml:"user"`
		Password  string `yaml:"password"`
		// PasswordFile reads Password from a file (job/secrets.go).
		PasswordFile string `yaml:"password_file,omitempty"`
	} `yaml:"sasl"`
	// TLS: `tls: true` (the system roots) or {ca_file, cert_file, key_file,
	// server_name} (TLS).
	TLS TLS `yaml:"tls"`
}

// Auth is c's SASL authentication; nil without a mechanism.
func (c Config) Auth() *SASL {
	if c.SASL.Mechanism == "" {
		return nil
	}
	return &SASL{Mechanism: c.SASL.Mechanism, User: c.SASL.User, Password: c.SASL.Password}
}

// TLS is TLS to Kafka brokers: `tls: true` (system roots) or a mapping
// with the fields of connopts.TLS (ca_file, cert_file/key_file for a
// client certificate, server_name, insecure_skip_verify).
type TLS connopts.TLS

// UnmarshalYAML accepts a bool or a mapping (unknown fields are errors).
func (k *TLS) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		var on bool
		if err := n.Decode(&on); err != nil {
			return fmt.Errorf("tls: want true, false or a mapping: %w", err)
		}
		*k = TLS{Enabled: on}
		return nil
	}
	b, err := yaml.Marshal(n)
	if err != nil {
		return err
	}
	d := yaml.NewDecoder(bytes.NewReader(b))
	d.KnownFields(true)
	var v connopts.TLS
	if err := d.Decode(&v); err != nil {
		return err
	}
	*k = TLS(v)
	return nil
}

// Config builds the TLS configuration (see connopts.TLS.Config).
func (k TLS) Config(resolve func(string) string) (*tls.Config, error) {
	return connopts.TLS(k).Config(resolve)
}

// SASL mechanisms accepted in SASL.Mechanism.
const (
	MechanismPlain       = "plain"
	MechanismScramSHA256 = "scram-sha-256"
	MechanismScramSHA512 = "scram-sha-512"
)

// SASL authenticates to the brokers.
type SASL struct {
	// Mechanism is "plain", "scram-sha-256" or "scram-sha-512". Required.
	Mechanism string
	// User and Password are the credentials. Both required.
	User     string
	Password string
}

// Validate reports every problem with s at once; field names are prefixed
// with "SASL.". A nil s is valid (no authentication).
func (s *SASL) Validate() error {
	if s == nil {
		return nil
	}
	var errs []error
	switch s.Mechanism {
	case MechanismPlain, MechanismScramSHA256, MechanismScramSHA512:
	default:
		errs = append(errs, fmt.Errorf("kafka: SASL.Mechanism %q is not plain, scram-sha-256 or scram-sha-512", s.Mechanism))
	}
	if s.User == "" {
		errs = append(errs, errors.New("kafka: SASL.User is required"))
	}
	if s.Password == "" {
		errs = append(errs, errors.New("kafka: SASL.Password is required"))
	}
	return errors.Join(errs...)
}

// ClientOptions returns the franz-go options that connect to brokers with an
// optional client id, TLS configuration and SASL authentication. The
// caller validates sasl first.
func ClientOptions(brokers []string, clientID string, tlsCfg *tls.Config, sasl *SASL) []kgo.Opt {
	opts := []kgo.Opt{kgo.SeedBrokers(brokers...)}
	if l := clientLogger(); l != nil {
		opts = append(opts, kgo.WithLogger(l))
	}
	if clientID != "" {
		opts = append(opts, kgo.ClientID(clientID))
	}
	if tlsCfg != nil {
		opts = append(opts, kgo.DialTLSConfig(tlsCfg.Clone()))
	}
	if sasl != nil {
		switch sasl.Mechanism {
		case MechanismPlain:
			opts = append(opts, kgo.SASL(plain.Auth{User: sasl.User, Pass: sasl.Password}.AsMechanism()))
		case MechanismScramSHA256:
			opts = append(opts, kgo.SASL(scram.Auth{User: sasl.User, Pass: sasl.Password}.AsSha256Mechanism()))
		case MechanismScramSHA512:
			opts = append(opts, kgo.SASL(scram.Auth{User: sasl.User, Pass: sasl.Password}.AsSha512Mechanism()))
		}
	}
	return opts
}

// ValidateBrokers reports an empty broker list or an empty broker address,
// naming the field Brokers.
func ValidateBrokers(brokers []string) error {
	if len(brokers) == 0 {
		return errors.New("kafka: Brokers is required")
	}
	for i, b := range brokers {
		if b == "" {
			return fmt.Errorf("kafka: Brokers[%d] is empty", i)
		}
	}
	return nil
}

// ProduceSync produces rs with cl and waits until all are acknowledged, or
// ctx ends, and returns the first error (ctx.Err() when it ended first).
// kgo's own ProduceSync can outlive ctx: once an idempotent producer has
// sent a request it cannot fail the request's records by itself (the broker
// may have written them), so with the broker gone it waits for it for
// ever — and so would a node's stop. Here the wait ends with ctx; the
// records left in flight are failed when cl is closed.
func ProduceSync(ctx context.Context, cl *kgo.Client, rs ...*kgo.Record) error {
	res := make(chan error, 1)
	go func() { res <- cl.ProduceSync(ctx, rs...).FirstErr() }()
	select {
	case err := <-res:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// ClientLogEnv names the environment variable that turns on franz-go's own
// log on stderr, for diagnosing a group or a transaction: error, warn,
// info or debug (docs/guides/exactly-once.md). Unset or anything else: no
// client log.
const ClientLogEnv = "JOINERY_KAFKA_CLIENT_LOG"

// clientLogger is the client log ClientLogEnv asks for, or nil.
func clientLogger() kgo.Logger {
	var level kgo.LogLevel
	switch strings.ToLower(os.Getenv(ClientLogEnv)) {
	case "error":
		level = kgo.LogLevelError
	case "warn":
		level = kgo.LogLevelWarn
	case "info":
		level = kgo.LogLevelInfo
	case "debug":
		level = kgo.LogLevelDebug
	default:
		return nil
	}
	return kgo.BasicLogger(os.Stderr, level, func() string {
		return "time=" + time.Now().UTC().Format(time.RFC3339Nano) + " kafka-client "
	})
}
