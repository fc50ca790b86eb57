package job

import (
	"strings"
	"testing"
)

// eosGood is a job with an exactly-once kafka sink, a kafka source on the
// same brokers (listed in another order) and a kafka dead-letter topic there.
const eosGood = `
name: eos
join:
  type: cdc
  mode: left
  left:  {name: users,   pk: id, join_on: id}
  right: {name: domains, pk: id, join_on: user_id}
sources:
  - {name: cdc, type: kafka, kafka: {brokers: ['a:9092', 'b:9092'], topic: cdc, group: g}, tables: {users: left, domains: right}}
sinks:
  - {type: kafka, kafka: {brokers: ['b:9092', 'a:9092'], topic: out, exactly_once: true}}
  - {type: stdout}
dead_letter: {type: kafka, kafka: {brokers: ['a:9092', 'b:9092'], topic: dlq}}
`

func TestJobExactlyOnce(t *testing.T) {
	s, err := Parse([]byte(eosGood))
	if err != nil {
		t.Fatal(err)
	}
	p, err := Compile(s)
	if err != nil {
		t.Fatal(err)
	}
	if !p.ExactlyOnce || !p.DeadLetterTxn {
		t.Errorf("ExactlyOnce %v, DeadLetterTxn %v; want both", p.ExactlyOnce, p.DeadLetterTxn)
	}
	// A dead-letter topic elsewhere is written outside the transactions.
	s, err = Parse([]byte(strings.Replace(eosGood, "dead_letter: {type: kafka, kafka: {brokers: ['a:9092', 'b:9092']", "dead_letter: {type: kafka, kafka: {brokers: ['c:9092']", 1)))
	if err != nil {
		t.Fatal(err)
	}
	if p, err = Compile(s); err != nil || !p.ExactlyOnce || p.DeadLetterTxn {
		t.Errorf("dead letters on other brokers: ExactlyOnce %v, DeadLetterTxn %v, err %v; want true, false, nil", p.ExactlyOnce, p.DeadLetterTxn, err)
	}
	// Without exactly_once, nothing is transactional.
	s, err = Parse([]byte(strings.Replace(eosGood, ", exactly_once: true", "", 1)))
	if err != nil {
		t.Fatal(err)
	}
	if p, err = Compile(s); err != nil || p.ExactlyOnce || p.DeadLetterTxn {
		t.Errorf("no exactly_once: ExactlyOnce %v, DeadLetterTxn %v, err %v", p.ExactlyOnce, p.DeadLetterTxn, err)
	}
}

// TestJobExactlyOnceRefused: the combinations an exactly-once kafka sink
// cannot serve are refused, each naming its field and the combination.
func TestJobExactlyOnceRefused(t *testing.T) {
	for _, c := range []struct{ name, from, to, want string }{
		{"file source", "{name: cdc, type: kafka, kafka: {brokers: ['a:9092', 'b:9092'], topic: cdc, group: g}, tables",
			"{name: cdc, type: file, path: x.jsonl, tables",
			"sources[0].type: a file source with an exactly-once kafka sink (sinks[0].kafka.exactly_once)"},
		{"redis-stream source", "{name: cdc, type: kafka, kafka: {brokers: ['a:9092', 'b:9092'], topic: cdc, group: g}, tables",
			"{name: cdc, type: redis-stream, redis: {addr: 'r:1'}, stream: s, group: g, tables",
			"sources[0].type: a redis-stream source with an exactly-once kafka sink"},
		{"source on other brokers", "brokers: ['a:9092', 'b:9092'], topic: cdc", "brokers: ['c:9092'], topic: cdc",
			"sources[0].kafka.brokers: must be those of the exactly-once sink (sinks[0].kafka.exactly_once: [b:9092 a:9092])"},
		{"second sink on other brokers", "  - {type: stdout}", "  - {type: kafka, kafka: {brokers: ['c:9092'], topic: o2, exactly_once: true}}",
			"sinks[1].kafka.brokers: must be those of sinks[0].kafka.exactly_once"},
		{"event-time join", "type: cdc\n  mode: left\n  left:  {name: users,   pk: id, join_on: id}\n  right: {name: domains, pk: id, join_on: user_id}",
			"type: interval\n  mode: inner\n  lower: 0s\n  upper: 1s\n  left:  {name: users, key: id, ts: ts}\n  right: {name: domains, key: user_id, ts: ts}",
			"join.type: interval with sinks[0].kafka.exactly_once: exactly-once output is for cdc and cdc-multi joins"},
		{"on a source", "topic: cdc, group: g}", "topic: cdc, group: g, exactly_once: true}",
			"sources[0].kafka.exactly_once: is a kafka sink's setting"},
		{"on the dead-letter output", "topic: dlq}}", "topic: dlq, exactly_once: true}}",
			"dead_letter.kafka.exactly_once: is a kafka sink's setting"},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := strings.Replace(eosGood, c.from, c.to, 1)
			if in == eosGood {
				t.Fatal("case did not change the input")
			}
			_, err := Parse([]byte(in))
			if err == nil {
				t.Fatalf("no error for\n%s", in)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q does not name %q", err, c.want)
			}
		})
	}
}
