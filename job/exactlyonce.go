package job

import (
	"fmt"
	"slices"

	"github.com/joinery/joinery/connectors"
	"github.com/joinery/joinery/connopts/kafkaopts"
)

// checkExactlyOnce checks a job with an exactly-once kafka sink
// (sinks[].kafka.exactly_once, docs/guides/exactly-once.md) and records it in p:
// its outputs are written in Kafka transactions that also commit its
// sources' offsets, so every source must be a kafka source on the sink's
// brokers (a transaction spans one cluster, and only a Kafka consumer
// group's offsets can be committed in one), and the join must be a
// changelog join (an event-time join's fired outputs are kept by
// watermark, not by input, and an aborted transaction would lose them).
// A kafka dead-letter output on the same brokers is written in the
// transactions (p.DeadLetterTxn); any other one is written before them,
// at least once.
func (s *Spec) checkExactlyOnce(p *Plan, bad func(field, format string, a ...any)) {
	var eos []int
	for i, sp := range p.Sinks {
		if k, ok := kafkaBlock(sp.Config); ok && k.ExactlyOnce {
			eos = append(eos, i)
		}
	}
	if p.DeadLetter != nil {
		if k, ok := kafkaBlock(p.DeadLetter.Config); ok && k.ExactlyOnce {
			bad("dead_letter.kafka.exactly_once", "is a kafka sink's setting: a kafka dead-letter output on the brokers of the job's exactly-once sink is written in its transactions")
		}
	}
	if len(eos) == 0 {
		return
	}
	p.ExactlyOnce = true
	first := fmt.Sprintf("sinks[%d].kafka.exactly_once", eos[0])
	brokers := p.Sinks[eos[0]].Config.(connectors.KafkaBlocked).KafkaBlock().Brokers
	for _, i := range eos[1:] {
		if k, _ := kafkaBlock(p.Sinks[i].Config); !sameBrokers(k.Brokers, brokers) {
			bad(fmt.Sprintf("sinks[%d].kafka.brokers", i), "must be those of %s (%v): one job's transactions run on one Kafka cluster", first, brokers)
		}
	}
	if s.Timed() {
		bad("join.type", "%s with %s: exactly-once output is for cdc and cdc-multi joins (an event-time join's fired outputs are not re-sent after an aborted transaction)", s.Join.Type, first)
	}
	for i, sp := range p.Sources {
		f := fmt.Sprintf("sources[%d]", i)
		k, ok := kafkaBlock(sp.Config)
		switch {
		case sp.Config == nil:
			// Its own errors are reported.
		case !ok || sp.Type != "kafka":
			bad(f+".type", "a %s source with an exactly-once kafka sink (%s): only a kafka source's offsets commit in the sink's transactions; use kafka sources, or drop exactly_once (outputs are then at least once, with stable ids)", sp.Type, first)
		case !sameBrokers(k.Brokers, brokers):
			bad(f+".kafka.brokers", "must be those of the exactly-once sink (%s: %v): a transaction commits the source's offsets on the cluster it writes to", first, brokers)
		}
	}
	if p.DeadLetter != nil {
		if k, ok := kafkaBlock(p.DeadLetter.Config); ok && p.DeadLetter.Type == "kafka" && sameBrokers(k.Brokers, brokers) {
			p.DeadLetterTxn = true
		}
	}
}

func kafkaBlock(c connectors.Config) (kafkaopts.Config, bool) {
	if k, ok := c.(connectors.KafkaBlocked); ok {
		return k.KafkaBlock(), true
	}
	return kafkaopts.Config{}, false
}

// sameBrokers reports whether a and b list the same brokers in any order.
func sameBrokers(a, b []string) bool {
	x, y := slices.Clone(a), slices.Clone(b)
	slices.Sort(x)
	slices.Sort(y)
	return slices.Equal(x, y)
}
