package kafka

import (
	"strings"
	"testing"
	"time"

	"github.com/joinery/joinery/connectors"
	"github.com/joinery/joinery/connopts/kafkaopts"
)

// TestKafkaEntryRevokeWait: a job's kafka.revoke_wait reaches the source's
// Config.RevokeWait (unset: 0, DefaultRevokeWait), and Config.Validate
// refuses it when negative or at or past the group's RebalanceTimeout
// (the member would be removed from the group while its revoke waits),
// exactly where the job refuses it by field (job's TestJobKafkaRevokeWait
// checks those messages).
func TestKafkaEntryRevokeWait(t *testing.T) {
	cases := map[time.Duration]string{ // revoke_wait -> Config.Validate's error ("": valid)
		0:                              "",
		300 * time.Millisecond:         "",
		RebalanceTimeout - time.Second: "",
		-time.Second:                   "kafka: RevokeWait must not be negative (got -1s)",
		RebalanceTimeout:               "kafka: RevokeWait must be under the consumer group's rebalance timeout 30s (got 30s)",
		2 * RebalanceTimeout:           "kafka: RevokeWait must be under the consumer group's rebalance timeout 30s (got 1m0s)",
	}
	for wait, bad := range cases {
		e := &Entry{KafkaEntry: connectors.KafkaEntry{Kafka: kafkaopts.Config{
			Brokers: []string{"k:9092"}, Topic: "t", Group: "g", RevokeWait: wait}}}
		cfg, err := e.Config(connectors.Env{})
		if err != nil {
			t.Fatal(err)
		}
		if cfg.RevokeWait != wait {
			t.Errorf("revoke_wait %v: Config.RevokeWait = %v", wait, cfg.RevokeWait)
		}
		err = cfg.Validate()
		switch {
		case bad == "" && err != nil:
			t.Errorf("revoke_wait %v: Config.Validate = %v", wait, err)
		case bad != "" && (err == nil || !strings.HasPrefix(err.Error(), bad)):
			t.Errorf("revoke_wait %v: Config.Validate = %v, want %q", wait, err, bad)
		}
		v := &connectors.Validator{At: "sources[0]", What: "kafka source"}
		e.Validate(v)
		if refused := len(v.Errors()) > 0; refused != (bad != "") {
			t.Errorf("revoke_wait %v: the job's errors %v, Config.Validate's %v", wait, v.Errors(), err)
		}
	}
}
