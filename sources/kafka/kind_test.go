package kafka

import (
	"strings"
	"testing"
	"time"

	"github.com/joinery/joinery/connectors"
	"github.com/joinery/joinery/connopts/kafkaopts"
)

// TestKafkaEntryRevokeWait: a job's kafka.revoke_wait is refused when
// negative or at or past the group's rebalance timeout (the member would
// be removed from the group while its revoke waits), both in the job
// (Entry.Validate, by field) and in Config.Validate, and otherwise reaches
// the source's Config.RevokeWait (unset: 0, DefaultRevokeWait).
func TestKafkaEntryRevokeWait(t *testing.T) {
	for _, tc := range []struct {
		name string
		wait time.Duration
		bad  string // "": valid
	}{
		{"unset", 0, ""},
		{"short", 300 * time.Millisecond, ""},
		{"just under the rebalance timeout", RebalanceTimeout - time.Second, ""},
		{"negative", -time.Second, "sources[0].kafka.revoke_wait: must not be negative (got -1s)"},
		{"at the rebalance timeout", RebalanceTimeout, "sources[0].kafka.revoke_wait: must be under the consumer group's rebalance timeout 1m0s (got 1m0s)"},
		{"past the rebalance timeout", 2 * RebalanceTimeout, "sources[0].kafka.revoke_wait: must be under the consumer group's rebalance timeout 1m0s (got 2m0s)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := &Entry{KafkaEntry: connectors.KafkaEntry{Kafka: kafkaopts.Config{
				Brokers: []string{"k:9092"}, Topic: "t", Group: "g", RevokeWait: tc.wait}}}
			v := &connectors.Validator{At: "sources[0]", What: "kafka source"}
			e.Validate(v)
			cfg, err := e.Config(connectors.Env{})
			if err != nil {
				t.Fatal(err)
			}
			cfgErr := cfg.Validate()
			if tc.bad == "" {
				if errs := v.Errors(); len(errs) > 0 || cfgErr != nil {
					t.Fatalf("revoke_wait %v refused: %v; Config.Validate: %v", tc.wait, errs, cfgErr)
				}
				if cfg.RevokeWait != tc.wait {
					t.Errorf("Config.RevokeWait = %v, want %v", cfg.RevokeWait, tc.wait)
				}
				return
			}
			if errs := v.Errors(); len(errs) != 1 || !strings.HasPrefix(errs[0].Error(), tc.bad) {
				t.Errorf("Validate errors %v, want one starting %q", errs, tc.bad)
			}
			if cfgErr == nil || !strings.Contains(cfgErr.Error(), "kafka: RevokeWait "+strings.TrimPrefix(tc.bad, "sources[0].kafka.revoke_wait: ")) {
				t.Errorf("Config.Validate = %v, want RevokeWait refused", cfgErr)
			}
		})
	}
}
