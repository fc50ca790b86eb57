package testutil

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"
)

// StartKafka starts an in-process Kafka (franz-go's kfake: one broker) with
// topics of partitions partitions each, stopped when the test ends, and
// returns its broker addresses.
func StartKafka(t testing.TB, partitions int32, topics ...string) []string {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(partitions, topics...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c.ListenAddrs()
}
