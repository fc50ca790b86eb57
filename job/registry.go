package job

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/joinery/joinery/connectors"
	"github.com/joinery/joinery/connectors/all"
	"github.com/joinery/joinery/formats/debeziumavro"
)

// Source formats besides debezium and json.
const (
	// FormatDebeziumAvro is Debezium's envelope in Avro, in the Confluent
	// Schema Registry wire format (formats/debeziumavro); the source needs
	// schema_registry.
	FormatDebeziumAvro = "debezium-avro"
	// FormatDebeziumJSONSchema is Debezium JSON behind the Confluent header
	// (JsonSchemaConverter); the schema is not needed to read it.
	FormatDebeziumJSONSchema = "debezium-jsonschema"
)

// SchemaRegistry is a Confluent-compatible Schema Registry (Confluent,
// Redpanda, Apicurio's ccompat API, Karapace): where a debezium-avro
// source fetches writer schemas by id, and where an avro sink registers
// its schema.
type SchemaRegistry struct {
	// URL of the registry, e.g. http://registry:8081; several separated by
	// commas are tried in order.
	URL string `yaml:"url,omitempty"`
	// Username and Password: HTTP basic auth (Confluent Cloud: API key and
	// secret). ${VAR} is expanded in both.
	Username string `yaml:"username,omitempty"`
	Password string `yaml:"password,omitempty"`
	// Token: a bearer token instead of basic auth. ${VAR} is expanded.
	Token string `yaml:"token,omitempty"`
	// TLS to the registry (https URLs use TLS with the system roots
	// without it); the fields of a redis tls block.
	TLS RedisTLS `yaml:"tls,omitempty"`
	// Timeout of one request (default 10s).
	Timeout time.Duration `yaml:"timeout,omitempty"`
}

// Set reports whether a registry is configured.
func (r SchemaRegistry) Set() bool { return r.URL != "" }

// RegistryClientConfig is the client configuration of r, with ${VAR}
// expanded and TLS files read.
func (s *Spec) RegistryClientConfig(r SchemaRegistry) (debeziumavro.ClientConfig, error) {
	c := debeziumavro.ClientConfig{
		Username: os.ExpandEnv(r.Username), Password: os.ExpandEnv(r.Password),
		Token: os.ExpandEnv(r.Token), Timeout: r.Timeout,
	}
	for _, u := range strings.Split(r.URL, ",") {
		if u = strings.TrimSpace(u); u != "" {
			c.URLs = append(c.URLs, u)
		}
	}
	tc, err := s.RedisTLSConfig(Redis{TLS: r.TLS})
	if err != nil {
		return c, fmt.Errorf("schema_registry.tls: %w", err)
	}
	c.TLS = tc
	return c, nil
}

// validateRegistry checks a schema_registry block at field f; need says
// whether the source or sink's format requires one.
func validateRegistry(f string, r SchemaRegistry, need bool, format string) []error {
	var errs []error
	switch {
	case need && !r.Set():
		errs = append(errs, fmt.Errorf("%s.url: must be set for %s", f, format))
	case !need && r != (SchemaRegistry{}):
		errs = append(errs, fmt.Errorf("%s: only a debezium-avro source or an avro kafka sink uses a schema registry (this has %s)", f, format))
	}
	for _, u := range strings.Split(r.URL, ",") {
		if u = strings.TrimSpace(u); r.Set() && !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
			errs = append(errs, fmt.Errorf("%s.url: must be http:// or https:// URLs (got %q)", f, u))
		}
	}
	if r.Username != "" && r.Token != "" {
		errs = append(errs, fmt.Errorf("%s: set username/password or token, not both", f))
	}
	if r.Timeout < 0 {
		errs = append(errs, fmt.Errorf("%s.timeout: must not be negative", f))
	}
	return errs
}

// Sink encodings (sinks[].encoding).
const (
	EncodingJSON = "json"
	EncodingAvro = "avro"
)

// validateSinkEncoding checks a sink's encoding, schema_registry and
// subject.
func validateSinkEncoding(f string, sk Sink) []error {
	var errs []error
	switch sk.Encoding {
	case "", EncodingJSON:
		if sk.Subject != "" {
			errs = append(errs, fmt.Errorf("%s.subject: only for encoding avro", f))
		}
	case EncodingAvro:
		if k, ok := all.Sinks.Lookup(sk.Type); ok && !k.Avro {
			errs = append(errs, fmt.Errorf("%s.encoding: avro is for %s sinks (this is %s)", f, all.Sinks.Where(func(k connectors.SinkKind) bool { return k.Avro }), sk.Type))
		}
	default:
		errs = append(errs, fmt.Errorf("%s.encoding: must be json or avro (got %q)", f, sk.Encoding))
	}
	return append(errs, validateRegistry(f+".schema_registry", sk.SchemaRegistry, sk.Encoding == EncodingAvro, "encoding "+sk.Encoding)...)
}
