package kafka

import "github.com/joinery/joinery/connopts/kafkaopts"

// SASL mechanisms accepted in SASL.Mechanism (connopts/kafkaopts).
const (
	MechanismPlain       = kafkaopts.MechanismPlain
	MechanismScramSHA256 = kafkaopts.MechanismScramSHA256
	MechanismScramSHA512 = kafkaopts.MechanismScramSHA512
)

// SASL authenticates to the brokers; it is connopts/kafkaopts.SASL, shared
// by the Kafka source, the Kafka sink and the Kafka ingest appender.
type SASL = kafkaopts.SASL

// ClientOptions is kafkaopts.ClientOptions.
var ClientOptions = kafkaopts.ClientOptions

// ValidateBrokers is kafkaopts.ValidateBrokers.
var ValidateBrokers = kafkaopts.ValidateBrokers
