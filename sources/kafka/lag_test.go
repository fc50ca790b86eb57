package kafka

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/joinery/joinery/internal/testutil"
)

// waitLag polls s.Lag until it prints as want.
func waitLag(t *testing.T, s *Source, want string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		m, err := s.Lag(context.Background())
		if err != nil {
			t.Fatalf("Lag: %v", err)
		}
		got := fmt.Sprint(m)
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("lag = %s, want %s", got, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestKafkaSourceLag(t *testing.T) {
	brokers := testutil.StartKafka(t, 3, topic)
	produce(t, brokers, "v", 0, 30) // 10 records per partition
	cfg := Config{Name: "users", Brokers: brokers, Topic: topic, Group: "g"}
	ctx := context.Background()

	s := open(t, cfg)
	// Assigned, nothing read or committed: the whole partitions.
	waitLag(t, s, "map[0:10 1:10 2:10]")
	readN(t, s, 30)
	waitLag(t, s, "map[0:10 1:10 2:10]") // read, not committed
	if err := s.Commit(ctx, positions("users", all, 4)); err != nil {
		t.Fatal(err)
	}
	waitLag(t, s, "map[0:5 1:5 2:5]")
	produce(t, brokers, "v", 30, 33)
	waitLag(t, s, "map[0:6 1:6 2:6]")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Lag(ctx); err == nil {
		t.Fatal("Lag after Close succeeded")
	}

	// A new member starts from the group's committed offsets.
	s2 := open(t, cfg)
	waitLag(t, s2, "map[0:6 1:6 2:6]")
	// A new group with StartOffset latest starts at the end.
	s3 := open(t, Config{Name: "users", Brokers: brokers, Topic: topic, Group: "g2", StartOffset: StartLatest})
	waitLag(t, s3, "map[0:0 1:0 2:0]")
}
