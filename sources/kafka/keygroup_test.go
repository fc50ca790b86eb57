package kafka

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/joinery/joinery/internal/streamshard"
	"github.com/joinery/joinery/sinks/deadletter/reason"
)

// TestPartitionIsKafkas checks Partition against the murmur2 values of
// Kafka's own UtilsTest.testMurmur2, reduced as the default partitioner
// does (toPositive(h) % n), so key groups are the partitions a Java or
// Debezium producer writes to.
func TestPartitionIsKafkas(t *testing.T) {
	for _, c := range []struct {
		key  string
		h    int32 // Utils.murmur2(key.getBytes())
		want int   // of 12 partitions
	}{
		{"21", -973932308, 0},
		{"foobar", -790332482, 6},
		{"a-little-bit-long-string", -985981536, 8},
		{"a-little-bit-longer-string", -1486304829, 11},
		{"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971, 5},
		{"abc", 479470107, 3},
	} {
		if got := Partition([]byte(c.key), 12); got != c.want || int(uint32(c.h)&0x7fffffff)%12 != c.want {
			t.Errorf("Partition(%q, 12) = %d, want %d", c.key, got, c.want)
		}
	}
	if got := Partition(nil, 12); got != -1 {
		t.Errorf("Partition(nil) = %d, want -1", got)
	}
	if got := Partition([]byte("x"), 0); got != -1 {
		t.Errorf("Partition of 0 partitions = %d, want -1", got)
	}
}

func TestPartitionKey(t *testing.T) {
	for _, c := range []struct{ template, key, want string }{
		{`{"user_id":{key}}`, "5", `{"user_id":5}`},
		{`{"user_id":{key}}`, "eu", `{"user_id":"eu"}`},
		{`{"user_id":{key}}`, `a"b`, `{"user_id":"a\"b"}`},
		{`{text}`, "eu", `eu`},
		{`{text}`, "5", `5`},
		{`{"schema":{"type":"struct"},"payload":{"id":{key}}}`, "7", `{"schema":{"type":"struct"},"payload":{"id":7}}`},
	} {
		if got := string(PartitionKey(c.template, c.key)); got != c.want {
			t.Errorf("PartitionKey(%q, %q) = %s, want %s", c.template, c.key, got, c.want)
		}
		if got, want := KeyGroup(c.template, c.key, 6), Partition([]byte(c.want), 6); got != want {
			t.Errorf("KeyGroup(%q, %q) = %d, want %d", c.template, c.key, got, want)
		}
	}
	for _, bad := range []string{"", "user", "{KEY}", "{key}{key}", "{key}-{text}"} {
		if ValidatePartitionKey(bad) == nil {
			t.Errorf("ValidatePartitionKey(%q) accepted", bad)
		}
	}
}

// TestOfTemplate checks which record keys a partition_key template
// writes: those a join key rebuilds byte for byte, and no others.
func TestOfTemplate(t *testing.T) {
	for _, c := range []struct {
		template, key string
		want          bool
	}{
		{`{"user_id":{key}}`, `{"user_id":5}`, true},
		{`{"user_id":{key}}`, `{"user_id":"eu"}`, true},
		{`{"user_id":{key}}`, `{"user_id":"a\"b"}`, true},
		{`{"user_id":{key}}`, `{"user_id": 5}`, false},                        // other spacing: other bytes
		{`{"user_id":{key}}`, `{"id":5}`, false},                              // another field
		{`{"user_id":{key}}`, `{"schema":{},"payload":{"user_id":5}}`, false}, // a schema envelope
		{`{"user_id":{key}}`, `{"user_id":"5"}`, false},                       // a string key looking like a number is grouped as the number
		{`{"user_id":{key}}`, `{"user_id":"\u0065u"}`, false},                 // escaped otherwise than the engine writes it
		{`{"user_id":{key}}`, `{"user_id":}`, false},                          // no key
		{`{"schema":{},"payload":{"user_id":{key}}}`, `{"schema":{},"payload":{"user_id":5}}`, true},
		{`{text}`, `eu`, true},
		{`{text}`, `5`, true},
		{`user-{text}`, `eu`, false},
	} {
		if got := OfTemplate(c.template, []byte(c.key)); got != c.want {
			t.Errorf("OfTemplate(%q, %s) = %v, want %v", c.template, c.key, got, c.want)
		}
	}
}

func members(n int, topics ...string) []GroupMember {
	out := make([]GroupMember, n)
	for i := range out {
		out[i] = GroupMember{ID: fmt.Sprintf("m-%02d", n-1-i), Name: fmt.Sprintf("joinery-%d", i), Topics: topics}
	}
	return out
}

// owners turns a plan of one topic into owner names by partition.
func owners(t *testing.T, plan map[string]map[string][]int32, ms []GroupMember, topic string, partitions int) []string {
	t.Helper()
	name := map[string]string{}
	for _, m := range ms {
		name[m.ID] = m.Name
	}
	out := make([]string, partitions)
	for id, tps := range plan {
		for _, p := range tps[topic] {
			if out[p] != "" {
				t.Fatalf("partition %d of %s assigned twice", p, topic)
			}
			out[p] = name[id]
		}
	}
	for p, o := range out {
		if o == "" {
			t.Fatalf("partition %d of %s assigned to nobody", p, topic)
		}
	}
	return out
}

// TestAssignKeyGroups checks the balancer's plan: partition p of every
// co-partitioned topic goes to streamshard.Assign's owner of key group p,
// every member gets its fair share, and a member joining or leaving moves
// few partitions (the ones that change owner in Assign, no more).
func TestAssignKeyGroups(t *testing.T) {
	for _, c := range []struct{ partitions, members int }{{1, 1}, {3, 3}, {6, 3}, {12, 5}, {64, 7}, {4, 6}} {
		t.Run(fmt.Sprintf("%d-over-%d", c.partitions, c.members), func(t *testing.T) {
			topics := map[string]int32{"users": int32(c.partitions), "domains": int32(c.partitions)}
			ms := members(c.members, "domains", "users")
			var names []string
			for _, m := range ms {
				names = append(names, m.Name)
			}
			plan := AssignKeyGroups(topics, ms)
			want := streamshard.Assign(c.partitions, names)
			for _, topic := range []string{"users", "domains"} {
				got := owners(t, plan, ms, topic, c.partitions)
				if !slices.Equal(got, want) {
					t.Errorf("%s: owners %v, want Assign's %v", topic, got, want)
				}
			}
			fair := streamshard.FairShare(c.partitions, c.members)
			for id, tps := range plan {
				if n := len(tps["users"]); n > fair {
					t.Errorf("member %s reads %d partitions, fair share %d", id, n, fair)
				}
			}
			// One more member: the plan is Assign's for the new fleet, and
			// few partitions beyond the newcomer's share move (Assign's
			// bound, internal/streamshard TestAssignRebalance).
			more := append(slices.Clone(ms), GroupMember{ID: "m-new", Name: "joinery-new", Topics: []string{"domains", "users"}})
			after := owners(t, AssignKeyGroups(topics, more), more, "users", c.partitions)
			if w := streamshard.Assign(c.partitions, append(names, "joinery-new")); !slices.Equal(after, w) {
				t.Errorf("after a join: owners %v, want Assign's %v", after, w)
			}
			moved, took := 0, 0
			for p := range after {
				if after[p] != want[p] {
					moved++
				}
				if after[p] == "joinery-new" {
					took++
				}
			}
			if limit := took + c.partitions/3; moved > limit {
				t.Errorf("a joining member moved %d of %d partitions (it took %d; limit %d)", moved, c.partitions, took, limit)
			}
		})
	}
}

// TestAssignKeyGroupsMembers checks the members the plan is made of: one
// without a name is named by its member ID, of two with one name the first
// by ID reads, and a member not reading a topic gets none of it.
func TestAssignKeyGroupsMembers(t *testing.T) {
	topics := map[string]int32{"users": 6, "other": 2}
	ms := []GroupMember{
		{ID: "b", Name: "joinery-0", Topics: []string{"users"}},
		{ID: "a", Name: "joinery-0", Topics: []string{"users"}},
		{ID: "c", Topics: []string{"users", "other"}},
	}
	plan := AssignKeyGroups(topics, ms)
	if len(plan["b"]["users"]) != 0 {
		t.Errorf("duplicate name's second member reads %v", plan["b"])
	}
	want := streamshard.Assign(6, []string{"joinery-0", "c"})
	for _, p := range plan["a"]["users"] {
		if want[p] != "joinery-0" {
			t.Errorf("a reads users/%d, Assign gives it to %s", p, want[p])
		}
	}
	if len(plan["a"]["users"])+len(plan["c"]["users"]) != 6 || len(plan["c"]["other"]) != 2 || len(plan["a"]["other"]) != 0 {
		t.Errorf("plan = %v", plan)
	}
}

// TestKeyGroupBalancerGroup runs the balancer in a real group (kfake): two
// co-partitioned sources each read the partitions Assign gives their member
// name, and a record its key's partition does not match is a
// *MisplacedError naming the rule.
func TestKeyGroupBalancerGroup(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(6, "users"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	brokers := c.ListenAddrs()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if n, err := TopicPartitions(ctx, brokers, "", nil, nil, []string{"users"}); err != nil || n["users"] != 6 {
		t.Fatalf("TopicPartitions = %v, %v", n, err)
	}
	if _, err := TopicPartitions(ctx, brokers, "", nil, nil, []string{"nope"}); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Errorf("TopicPartitions of a missing topic: %v", err)
	}
	assigned := map[string]chan []int32{"joinery-a": make(chan []int32, 10), "joinery-b": make(chan []int32, 10)}
	srcs := map[string]*Source{}
	for name, ch := range assigned {
		srcs[name] = open(t, Config{Brokers: brokers, Topic: "users", Group: "g", KeyGroups: true, Member: name, PartitionKey: `{"user_id":{key}}`,
			OnPartitions: func(a, _ []int32) { ch <- a }})
	}
	want := streamshard.Assign(6, []string{"joinery-a", "joinery-b"})
	for name, ch := range assigned {
		var got []int32
		deadline := time.After(20 * time.Second)
		for !slices.Equal(got, mine(want, name)) {
			select {
			case got = <-ch:
			case <-deadline:
				t.Fatalf("%s was assigned %v, want %v", name, got, mine(want, name))
			}
		}
	}
	// Records keyed by the default partitioner are read; one written to
	// another partition is delivered rejected with the rule, and the
	// records after it in its partition are read on.
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	key := []byte(`{"user_id":5}`)
	p := int32(Partition(key, 6))
	wrong := p // a partition of the other member, so each reads one of the two
	for want[wrong] == want[p] {
		wrong = (wrong + 1) % 6
	}
	var after []byte // a key of partition wrong
	for i := 0; after == nil; i++ {
		if k := fmt.Appendf(nil, `{"user_id":%d}`, i); Partition(k, 6) == int(wrong) {
			after = k
		}
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "users", Partition: p, Key: key, Value: []byte("ok")},
		&kgo.Record{Topic: "users", Partition: wrong, Key: key, Value: []byte("misplaced")},
		&kgo.Record{Topic: "users", Partition: wrong, Key: after, Value: []byte("after")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	got := readN(t, srcs[want[p]], 1)
	if string(got[0].Value) != "ok" || got[0].Pos.Partition != p || got[0].Reject != nil {
		t.Errorf("owner of partition %d read %+v", p, got)
	}
	var mis *MisplacedError
	got = readN(t, srcs[want[wrong]], 2)
	if r := got[0].Reject; r == nil || r.Reason != reason.Misplaced || !errors.As(r.Err, &mis) || mis.Partition != wrong || mis.Want != p ||
		!strings.Contains(r.Err.Error(), "default partitioner") || string(got[0].Value) != "misplaced" {
		t.Errorf("misplaced record: %+v", got[0])
	}
	if string(got[1].Value) != "after" || got[1].Reject != nil || got[1].Pos.Partition != wrong {
		t.Errorf("record after the misplaced one: %+v", got[1])
	}
	// A key in its partition that the template does not write (a schema
	// envelope the template lacks) is refused too, naming the template.
	other := []byte(`{"schema":{},"payload":{"user_id":5}}`)
	q := int32(Partition(other, 6))
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "users", Partition: q, Key: other, Value: []byte("enveloped")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	got = readN(t, srcs[want[q]], 1)
	if r := got[0].Reject; r == nil || r.Reason != reason.Misplaced || !errors.As(r.Err, &mis) || mis.Template == "" ||
		!strings.Contains(r.Err.Error(), "not kafka.partition_key") {
		t.Errorf("key off the template: %+v", got[0])
	}
}

// mine lists the partitions owner gives name.
func mine(owner []string, name string) []int32 {
	out := []int32{}
	for p, o := range owner {
		if o == name {
			out = append(out, int32(p))
		}
	}
	return out
}
