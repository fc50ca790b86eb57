package kafka

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/joinery/joinery/internal/testutil"
	"github.com/joinery/joinery/sources"
)

// TestKafkaSourceGroupJoinFailsTransient: a member whose join the group
// coordinator refuses (here twice, with an error the client does not retry
// in place; under load, a join or sync that outlasts its timeout while the
// group waits for a killed member) reads a transient error — the node
// retries the read while the client joins again — and then the records,
// once a join succeeds.
func TestKafkaSourceGroupJoinFailsTransient(t *testing.T) {
	c, brokers := testutil.KafkaCluster(t, kfake.SeedTopics(3, topic))
	var refused atomic.Int32
	c.ControlKey(int16(kmsg.JoinGroup), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if refused.Load() >= 2 {
			return nil, nil, false
		}
		refused.Add(1)
		resp := req.ResponseKind().(*kmsg.JoinGroupResponse)
		resp.ErrorCode = kerr.InvalidSessionTimeout.Code
		return resp, nil, true
	})
	produce(t, brokers, "v", 0, 5)
	s := open(t, Config{Name: "users", Brokers: brokers, Topic: topic, Group: "g"})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	transient := 0
	var got []sources.Message
	for len(got) < 5 {
		msgs, err := s.Read(ctx, 10)
		switch {
		case sources.IsTransient(err):
			transient++
		case err != nil:
			t.Fatalf("Read after %d transient errors: %v, want a transient error or records", transient, err)
		}
		got = append(got, msgs...)
	}
	if transient == 0 || refused.Load() < 2 {
		t.Errorf("%d transient read errors for %d refused joins, want at least one for two", transient, refused.Load())
	}
}
