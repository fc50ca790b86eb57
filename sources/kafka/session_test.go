package kafka

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/joinery/joinery/internal/testutil"
)

// rawMember speaks the classic group protocol by hand, so that a test can
// stop one member mid-protocol as a kill -9 would.
type rawMember struct {
	t       *testing.T
	cl      *kgo.Client
	id      string
	session time.Duration
	rebal   time.Duration
}

// join sends JoinGroup (again with the member id the broker hands out)
// and returns the answer's error code, generation and leader.
func (m *rawMember) join(ctx context.Context) (int16, int32, string) {
	for {
		req := kmsg.NewPtrJoinGroupRequest()
		req.Group, req.MemberID, req.ProtocolType = "g", m.id, "consumer"
		req.SessionTimeoutMillis = int32(m.session.Milliseconds())
		req.RebalanceTimeoutMillis = int32(m.rebal.Milliseconds())
		p := kmsg.NewJoinGroupRequestProtocol()
		p.Name, p.Metadata = "range", []byte{0}
		req.Protocols = append(req.Protocols, p)
		resp, err := req.RequestWith(ctx, m.cl)
		if err != nil {
			return -1, 0, ""
		}
		if resp.ErrorCode == kerr.MemberIDRequired.Code {
			m.id = resp.MemberID
			continue
		}
		if resp.ErrorCode == 0 {
			m.id = resp.MemberID
		}
		return resp.ErrorCode, resp.Generation, resp.LeaderID
	}
}

// sync sends SyncGroup for generation gen (the leader with an empty
// assignment for every member it names).
func (m *rawMember) sync(ctx context.Context, gen int32, members ...string) int16 {
	req := kmsg.NewPtrSyncGroupRequest()
	req.Group, req.MemberID, req.Generation = "g", m.id, gen
	for _, id := range members {
		a := kmsg.NewSyncGroupRequestGroupAssignment()
		a.MemberID = id
		req.GroupAssignment = append(req.GroupAssignment, a)
	}
	resp, err := req.RequestWith(ctx, m.cl)
	if err != nil {
		m.t.Fatalf("sync %s: %v", m.id, err)
	}
	return resp.ErrorCode
}

// TestRebalanceUnderSession checks the relation of RebalanceTimeout and
// SessionTimeout on the fake broker the tests run (kfake), at a thirtieth
// of their size: a group of two members, one of which dies (it sends
// nothing more), and a new member joins, as a node killed -9 and started
// again does. The live member rejoins at once and waits in the rebalance
// for the dead one. kfake expires a member waiting in a join by its
// session (Kafka does not); with the rebalance timeout under the session
// timeout the rebalance's timer ends it first, removing the dead member,
// and both waiting members get their join answered — generation 3, before
// the live member's session would have run out.
func TestRebalanceUnderSession(t *testing.T) {
	rebal, session := RebalanceTimeout/30, SessionTimeout/30
	if rebal >= session {
		t.Fatalf("RebalanceTimeout %v is not under SessionTimeout %v", RebalanceTimeout, SessionTimeout)
	}
	_, brokers := testutil.KafkaCluster(t, kfake.SeedTopics(1, "t"), kfake.GroupMinSessionTimeout(100*time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	member := func() *rawMember {
		return &rawMember{t: t, cl: testutil.KafkaClient(t, brokers), session: session, rebal: rebal}
	}
	live, dead := member(), member()

	// Generation 1: live alone; generation 2: live and dead.
	if code, gen, _ := live.join(ctx); code != 0 || gen != 1 {
		t.Fatalf("first join: code %d, generation %d", code, gen)
	}
	if code := live.sync(ctx, 1, live.id); code != 0 {
		t.Fatalf("first sync: code %d", code)
	}
	joined := make(chan int16, 2)
	go func() { code, _, _ := dead.join(ctx); joined <- code }()
	time.Sleep(50 * time.Millisecond) // the dead member's join starts the rebalance
	code, gen, leader := live.join(ctx)
	if code != 0 || gen != 2 || <-joined != 0 {
		t.Fatalf("second round: code %d, generation %d", code, gen)
	}
	for _, m := range []*rawMember{live, dead} {
		go func(m *rawMember) {
			if m.id == leader {
				joined <- m.sync(ctx, gen, live.id, dead.id)
			} else {
				joined <- m.sync(ctx, gen)
			}
		}(m)
	}
	if a, b := <-joined, <-joined; a != 0 || b != 0 {
		t.Fatalf("second sync: codes %d, %d", a, b)
	}
	// dead sends nothing from here on. A new member joins; live rejoins
	// at once and waits with it for dead.
	start := time.Now()
	fresh := member()
	answered := make(chan [2]int32, 2)
	for _, m := range []*rawMember{fresh, live} {
		go func(m *rawMember) {
			code, gen, _ := m.join(ctx)
			answered <- [2]int32{int32(code), gen}
		}(m)
	}
	for range 2 {
		select {
		case a := <-answered:
			if a[0] != 0 || a[1] != 3 {
				t.Fatalf("join after the death: code %d, generation %d, want 0 and 3", a[0], a[1])
			}
		case <-time.After(3 * session):
			t.Fatalf("a join waiting in the rebalance was not answered within %v (rebalance timeout %v, session timeout %v)", 3*session, rebal, session)
		}
	}
	t.Logf("the rebalance ended %v after the new member joined (rebalance timeout %v, session timeout %v)", time.Since(start).Round(time.Millisecond), rebal, session)
}
