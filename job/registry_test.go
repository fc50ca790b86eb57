package job

import (
	"strings"
	"testing"
)

// TestJobSchemaRegistry: debezium-avro sources and avro sinks need a
// schema_registry, others must not have one, and the fields are checked.
func TestJobSchemaRegistry(t *testing.T) {
	src := "  - {name: cdc, type: file, path: x.jsonl, tables: {users: left, domains: right}%s}\n"
	sink := "  - {type: kafka, kafka: {brokers: ['k:9092'], topic: out}%s}\n"
	for _, c := range []struct{ src, sink, want string }{
		{", format: debezium-avro, schema_registry: {url: 'http://r:8081'}", "", ""},
		{", format: debezium-avro, schema_registry: {url: 'https://a:1, https://b:2', username: u, password: '${P}', tls: {enabled: true}}", ", encoding: avro, subject: s, schema_registry: {url: 'http://r:8081', token: t}", ""},
		{", format: debezium-avro", "", "sources[0].schema_registry.url: must be set for format debezium-avro"},
		{", schema_registry: {url: 'http://r:8081'}", "", "sources[0].schema_registry: only a debezium-avro source or an avro kafka sink uses a schema registry"},
		{", format: debezium-avro, schema_registry: {url: 'r:8081'}", "", "sources[0].schema_registry.url: must be http:// or https:// URLs"},
		{", format: debezium-avro, schema_registry: {url: 'http://r', username: u, token: t}", "", "set username/password or token, not both"},
		{", format: avro", "", "sources[0].format: must be debezium, debezium-avro, debezium-jsonschema or json"},
		{", format: debezium-jsonschema", "", ""},
		{"", ", encoding: avro", "sinks[1].schema_registry.url: must be set for encoding avro"},
		{"", ", encoding: protobuf", "sinks[1].encoding: must be json or avro"},
		{"", ", subject: s", "sinks[1].subject: only for encoding avro"},
	} {
		y := strings.Replace(good, "  - {name: cdc, type: file, path: x.jsonl, tables: {users: left, domains: right}}\n", strings.ReplaceAll(src, "%s", c.src), 1)
		y = strings.Replace(y, "  - {type: stdout}\n", "  - {type: stdout}\n"+strings.ReplaceAll(sink, "%s", c.sink), 1)
		s, err := Parse([]byte(y))
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s %s: %v", c.src, c.sink, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s %s: error %v, want one containing %q", c.src, c.sink, err, c.want)
		case c.want == "":
			t.Setenv("P", "pw")
			cc, err := s.RegistryClientConfig(s.Sources[0].SchemaRegistry)
			if err != nil || len(cc.URLs) == 0 != (s.Sources[0].Format != FormatDebeziumAvro) {
				t.Errorf("%s: client config %+v, %v", c.src, cc, err)
			}
			if strings.Contains(c.src, "b:2") && (len(cc.URLs) != 2 || cc.Password != "pw" || cc.TLS == nil) {
				t.Errorf("client config %+v: want two URLs, the password expanded, TLS", cc)
			}
		}
	}
	timed := strings.Replace(good, "type: cdc", "type: window", 1)
	if _, err := Parse([]byte(strings.Replace(timed, "tables: {users: left, domains: right}", "side: left, format: debezium-avro, schema_registry: {url: 'http://r'}", 1))); err == nil || !strings.Contains(err.Error(), "debezium-avro is for cdc joins") {
		t.Errorf("debezium-avro on a window join: %v", err)
	}
}
