package kafka

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/joinery/joinery/internal/streamshard"
)

// Kafka topics co-partitioned with the join (sources[].partitioned_by:
// join_key): the record key is the join column, so partition p of every such
// topic holds exactly the keys of key group p, and the member that reads
// partition p hosts their key actors (docs/concepts/key-groups.md, "Key groups").

// Partition is the partition Kafka's default partitioner puts a record with
// key in, among partitions: toPositive(murmur2(key)) % partitions, franz-go's
// StickyKeyPartitioner (KafkaHasher over murmur2) as the Java producer does.
// A nil key or partitions <= 0: -1 (the default partitioner spreads keyless
// records; they follow no key group).
func Partition(key []byte, partitions int) int {
	if key == nil || partitions <= 0 {
		return -1
	}
	return keyPartitioner.Partition(&kgo.Record{Key: key}, partitions)
}

var keyPartitioner = kgo.StickyKeyPartitioner(nil).ForTopic("")

// The placeholders of a partition_key template (kafka.partition_key).
const (
	// KeyJSON is the join key as a JSON value: `5` for a number, `"eu"`
	// otherwise (as Debezium's JSON converter writes a key column).
	KeyJSON = "{key}"
	// KeyText is the join key's text as it is: `5`, `eu` (a producer keyed
	// by the join key's string form).
	KeyText = "{text}"
)

// ValidatePartitionKey checks a partition_key template: it must name the
// key once.
func ValidatePartitionKey(template string) error {
	if n := strings.Count(template, KeyJSON) + strings.Count(template, KeyText); n != 1 {
		return fmt.Errorf("must contain %s (the join key as JSON) or %s (its text) once, e.g. %s for Debezium JSON with message.key.columns set to the join column user_id (got %q)",
			KeyJSON, KeyText, `'{"user_id":{key}}'`, template)
	}
	return nil
}

// OfTemplate reports whether key is the record key template writes for
// some join key: the template's text around its placeholder, and between
// them a key that PartitionKey writes back to the same bytes (for {key}, a
// JSON number or string). Such a record's key group, computed from its join
// key, is the partition its key bytes hash to.
func OfTemplate(template string, key []byte) bool {
	ph := KeyJSON
	i := strings.Index(template, ph)
	if i < 0 {
		ph = KeyText
		i = strings.Index(template, ph)
	}
	if i < 0 {
		return false
	}
	prefix, suffix := template[:i], template[i+len(ph):]
	k := string(key)
	if len(k) < len(prefix)+len(suffix) || !strings.HasPrefix(k, prefix) || !strings.HasSuffix(k, suffix) {
		return false
	}
	text := k[len(prefix) : len(k)-len(suffix)]
	if ph == KeyJSON && strings.HasPrefix(text, `"`) {
		var s string
		if json.Unmarshal([]byte(text), &s) != nil {
			return false
		}
		text = s
	}
	return string(PartitionKey(template, text)) == k
}

// PartitionKey rebuilds the record key bytes a producer wrote for join key
// key (record.Key's text form) from template: every {key} is replaced by the
// key as a JSON value, every {text} by its text.
func PartitionKey(template, key string) []byte {
	j := streamshard.KeyJSON(key) // `[5]`, `["eu"]`
	r := strings.NewReplacer(KeyJSON, string(j[1:len(j)-1]), KeyText, key)
	return []byte(r.Replace(template))
}

// KeyGroup is the key group of join key key among partitions: the partition
// the default partitioner puts the key bytes PartitionKey(template, key) in.
func KeyGroup(template, key string, partitions int) int {
	return Partition(PartitionKey(template, key), partitions)
}

// MisplacedError says that a record of a co-partitioned topic is not in the
// partition its key belongs to: the producer did not use Kafka's default
// partitioner with the topic's partition count, or wrote no key — or its
// key is not what the source's partition_key template writes (Template).
// Read delivers such a record with a sources.Reject (reason misplaced)
// holding it; the partition is read on.
type MisplacedError struct {
	Source, Topic   string
	Partition, Want int32 // Want -1: no key
	Offset          int64
	Partitions      int
	Key             []byte
	// Template, when set, is the partition_key the key does not follow.
	Template string
}

func (e *MisplacedError) Error() string {
	if e.Template != "" {
		return fmt.Sprintf("kafka: source %s: record %s/%d@%d has key %q, which is not kafka.partition_key %q of any join key: the key's actors would be placed by other bytes than the producer wrote (set partition_key to the key the producer writes, e.g. with or without the converter's schema envelope)",
			e.Source, e.Topic, e.Partition, e.Offset, e.Key, e.Template)
	}
	if e.Want < 0 {
		return fmt.Sprintf("kafka: source %s: record %s/%d@%d has no key: partitioned_by join_key needs every record keyed by the join column (Debezium message.key.columns)",
			e.Source, e.Topic, e.Partition, e.Offset)
	}
	return fmt.Sprintf("kafka: source %s: record %s/%d@%d has key %q, which Kafka's default partitioner (murmur2(key) %% %d partitions) puts in partition %d: partitioned_by join_key needs the topic written with the default partitioner, keyed by the join column",
		e.Source, e.Topic, e.Partition, e.Offset, e.Key, e.Partitions, e.Want)
}

// TopicPartitions asks the brokers for the partition count of each topic.
// A topic that does not exist is an error naming it.
func TopicPartitions(ctx context.Context, brokers []string, clientID string, tlsCfg *tls.Config, sasl *SASL, topics []string) (map[string]int, error) {
	client, err := kgo.NewClient(ClientOptions(brokers, clientID, tlsCfg, sasl)...)
	if err != nil {
		return nil, fmt.Errorf("kafka: client: %w", err)
	}
	defer client.Close()
	return topicPartitions(ctx, client, topics)
}

func topicPartitions(ctx context.Context, client *kgo.Client, topics []string) (map[string]int, error) {
	req := kmsg.NewPtrMetadataRequest()
	for _, t := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(t)
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(ctx, client)
	if err != nil {
		return nil, fmt.Errorf("kafka: metadata of %v: %w", topics, err)
	}
	out := map[string]int{}
	var errs []error
	for _, t := range resp.Topics {
		name := ""
		if t.Topic != nil {
			name = *t.Topic
		}
		if err := kerr.ErrorForCode(t.ErrorCode); err != nil {
			errs = append(errs, fmt.Errorf("kafka: topic %s: %w", name, err))
			continue
		}
		out[name] = len(t.Partitions)
	}
	for _, t := range topics {
		if _, ok := out[t]; !ok && len(errs) == 0 {
			errs = append(errs, fmt.Errorf("kafka: topic %s: not in the brokers' metadata", t))
		}
	}
	return out, errors.Join(errs...)
}

// keyGroupProtocol is the group protocol name of KeyGroupBalancer.
const keyGroupProtocol = "joinery-keygroups"

// KeyGroupBalancer is the consumer-group balancer of co-partitioned topics:
// partition p of every topic goes to the group member whose Joinery member
// name is streamshard.Assign(partitions, names)[p], the owner of key group p
// — the member that hosts the key actors of the partition's keys. Each member
// carries its name (member) in its join metadata's UserData; a member
// without one is named by its group member ID (it owns no key group then,
// until it joins the fleet). It is eager: a rebalance revokes every
// partition, the old owners commit what they applied, and the new ones
// resume from the committed offsets.
func KeyGroupBalancer(member string) kgo.GroupBalancer { return &keyGroupBalancer{member: member} }

type keyGroupBalancer struct{ member string }

func (*keyGroupBalancer) ProtocolName() string { return keyGroupProtocol }
func (*keyGroupBalancer) IsCooperative() bool  { return false }

func (b *keyGroupBalancer) JoinGroupMetadata(interests []string, _ map[string][]int32, generation int32) []byte {
	meta := kmsg.NewConsumerMemberMetadata()
	meta.Version = 3
	meta.Topics = interests
	meta.Generation = generation
	meta.UserData = []byte(b.member)
	return meta.AppendTo(nil)
}

func (*keyGroupBalancer) ParseSyncAssignment(assignment []byte) (map[string][]int32, error) {
	return kgo.ParseConsumerSyncAssignment(assignment)
}

func (b *keyGroupBalancer) MemberBalancer(members []kmsg.JoinGroupResponseMember) (kgo.GroupMemberBalancer, map[string]struct{}, error) {
	cb, err := kgo.NewConsumerBalancer(b, members)
	return cb, cb.MemberTopics(), err
}

func (*keyGroupBalancer) Balance(cb *kgo.ConsumerBalancer, topics map[string]int32) kgo.IntoSyncAssignment {
	var ms []GroupMember
	cb.EachMember(func(m *kmsg.JoinGroupResponseMember, meta *kmsg.ConsumerMemberMetadata) {
		ms = append(ms, GroupMember{ID: m.MemberID, Name: string(meta.UserData), Topics: meta.Topics})
	})
	plan := cb.NewPlan()
	byID := map[string]*kmsg.JoinGroupResponseMember{}
	for _, m := range cb.Members() {
		byID[m.MemberID] = &m
	}
	for id, tps := range AssignKeyGroups(topics, ms) {
		for t, ps := range tps {
			plan.AddPartitions(byID[id], t, ps)
		}
	}
	return plan
}

// GroupMember is one member of a consumer group, as KeyGroupBalancer sees
// it: its group member ID, its Joinery member name (its join metadata's
// UserData; "" none) and the topics it reads.
type GroupMember struct {
	ID, Name string
	Topics   []string
}

// AssignKeyGroups is KeyGroupBalancer's plan: member ID -> topic ->
// partitions. Partition p of each topic goes to the member named
// streamshard.Assign(partitions, names of the members reading it)[p]; a
// member without a name is named by its ID; of two members with one name
// (a restarted node whose old session has not expired yet) the first by ID
// reads.
func AssignKeyGroups(topics map[string]int32, members []GroupMember) map[string]map[string][]int32 {
	ms := slices.Clone(members)
	slices.SortFunc(ms, func(a, b GroupMember) int { return strings.Compare(a.ID, b.ID) })
	plan := map[string]map[string][]int32{}
	for _, m := range ms {
		plan[m.ID] = map[string][]int32{}
	}
	names := make([]string, 0, len(topics))
	for t := range topics {
		names = append(names, t)
	}
	slices.Sort(names)
	for _, t := range names {
		byName := map[string]string{} // name -> member ID
		var live []string
		for _, m := range ms {
			if !slices.Contains(m.Topics, t) {
				continue
			}
			name := m.Name
			if name == "" {
				name = m.ID
			}
			if _, dup := byName[name]; !dup {
				byName[name] = m.ID
				live = append(live, name)
			}
		}
		for p, owner := range streamshard.Assign(int(topics[t]), live) {
			id := byName[owner]
			plan[id][t] = append(plan[id][t], int32(p))
		}
	}
	return plan
}
