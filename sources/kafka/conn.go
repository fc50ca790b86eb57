package kafka

import (
	"crypto/tls"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// SASL mechanisms accepted in SASL.Mechanism.
const (
	MechanismPlain       = "plain"
	MechanismScramSHA256 = "scram-sha-256"
	MechanismScramSHA512 = "scram-sha-512"
)

// SASL authenticates to the brokers. It is shared by the Kafka source, the
// Kafka sink and the Kafka ingest appender.
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
// optional client id, TLS configuration and SASL authentication. It is meant
// for the Kafka connectors of Joinery (sinks/kafka, ingest), which keep
// franz-go types to themselves. The caller validates sasl first.
func ClientOptions(brokers []string, clientID string, tlsCfg *tls.Config, sasl *SASL) []kgo.Opt {
	opts := []kgo.Opt{kgo.SeedBrokers(brokers...)}
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
// naming the field Brokers. Shared with the other Kafka connectors.
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
