package node_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/joinery/joinery/internal/streamshard"
	"github.com/joinery/joinery/internal/testutil"
	"github.com/joinery/joinery/node"
	"github.com/joinery/joinery/persistence/embedded"
	"github.com/joinery/joinery/sinks/deadletter"
)

// mixedCDC is a Debezium file with good records and one of every bad input
// class. Offsets are line numbers (from 1). want holds "offset:reason" of
// every record that must be dead-lettered.
var mixedCDC = []struct {
	line, reason string
}{
	{`{"op":"c","after":{"id":1,"firstname":"Egor","lastname":"Myasnikov"},"source":{"table":"users","lsn":10}}`, ""},
	{`{"op":"c","after":{"id":2,"firstname":"Anna","lastname":"Lis"},"source":{"table":"users","lsn":11}}`, ""},
	{`{"op":"c","after":{"id":1,"user_id":1,"domain_name":"Approval"},"source":{"table":"domains","lsn":12}}`, ""},
	{`{"op":"c","after":{"id":2,"user_id":2,"domain_name":"Renewal"},"source":{"table":"domains","lsn":13}}`, ""},
	{`{"op":"c","after":{"id":9,`, "not-json"},
	// No user_id: matches nothing in the left join, counted as unmatched.
	{`{"op":"c","after":{"id":3,"domain_name":"NoUser"},"source":{"table":"domains","lsn":14}}`, ""},
	{`{"op":"c","after":{"id":4,"user_id":{"a":1},"domain_name":"Obj"},"source":{"table":"domains","lsn":15}}`, "wrong-type"},
	{`{"op":"x","after":{"id":5,"user_id":1},"source":{"table":"domains","lsn":16}}`, "unknown-op"},
	{`{"op":"c","after":{"id":6,"user_id":1,"domain_name":"` + strings.Repeat("x", 600) + `"},"source":{"table":"domains","lsn":17}}`, "too-large"},
	{`{"after":{"id":7,"user_id":1},"source":{"table":"domains","lsn":18}}`, "missing-op"},
	{`{"op":"c","after":{"user_id":1,"domain_name":"NoPK"},"source":{"table":"domains","lsn":19}}`, "missing-pk"},
	{`{"op":"c","after":{"id":8},"source":{"table":"orders","lsn":20}}`, "unknown-table"},
	{`{"op":"t","source":{"table":"domains","lsn":21}}`, "truncate"},
	{`{"after":"users","op":"c","source":{"table":"users","lsn":22}}`, "bad-row"},
	{`null`, ""}, // a tombstone: counted, not dead-lettered
	{`{"op":"u","before":{"id":1,"user_id":1,"domain_name":"Approval"},"after":{"id":1,"user_id":1,"domain_name":"Approval2"},"source":{"table":"domains","lsn":30}}`, ""},
	// Debezium replays (same source position, new offset): dropped.
	{`{"op":"u","before":{"id":1,"user_id":1,"domain_name":"Approval"},"after":{"id":1,"user_id":1,"domain_name":"Approval2"},"source":{"table":"domains","lsn":30}}`, ""},
	{`{"op":"c","after":{"id":1,"user_id":1,"domain_name":"Approval"},"source":{"table":"domains","lsn":12}}`, ""},
	// A before holding only the key: a delete, and an update.
	{`{"op":"d","before":{"id":2},"source":{"table":"users","lsn":40}}`, ""},
	{`{"op":"u","before":{"id":1},"after":{"id":1,"firstname":"Egor","lastname":"M2"},"source":{"table":"users","lsn":41}}`, ""},
}

// mixedWant is the join of mixedCDC's good records.
var mixedWant = map[string]string{"1,1": "Egor|M2|Approval2"}

func mixedDeadLetters() []string {
	var want []string
	for i, m := range mixedCDC {
		if m.reason != "" {
			want = append(want, fmt.Sprintf("%d:%s", i+1, m.reason))
		}
	}
	return want
}

func writeMixed(t *testing.T, dir string) {
	t.Helper()
	var lines [][]byte
	for _, m := range mixedCDC {
		lines = append(lines, []byte(m.line))
	}
	writeLines(t, filepath.Join(dir, "mixed.jsonl"), lines)
}

const mixedSource = `sources: [{name: cdc, type: file, path: mixed.jsonl, tables: {users: left, domains: right}, max_record_bytes: 400%s}]
sinks: [{type: table}]
`

// summarize renders dead letters as sorted "offset:reason", checking each
// is complete.
func summarize(t *testing.T, rs []deadletter.Record) []string {
	t.Helper()
	var got []string
	for _, r := range rs {
		raw, err := r.Bytes()
		if err != nil || r.Source != "cdc" || r.Position.Source != "cdc" || r.Error == "" || r.Time.IsZero() ||
			(r.Reason != "truncate" && len(raw) == 0) || r.Size < len(raw) {
			t.Errorf("incomplete dead letter %+v (%v)", r, err)
		}
		if want := mixedCDC[r.Position.Offset-1].line; r.Reason != "too-large" && string(raw) != want {
			t.Errorf("dead letter at %d holds %q, want %q", r.Position.Offset, raw, want)
		}
		got = append(got, fmt.Sprintf("%d:%s", r.Position.Offset, r.Reason))
	}
	sort.Slice(got, func(i, j int) bool {
		var a, b int
		fmt.Sscanf(got[i], "%d", &a)
		fmt.Sscanf(got[j], "%d", &b)
		return a < b
	})
	return got
}

// TestNodeBadInputDeadLetter runs the mixed file with each dead-letter
// output: every good result, one dead letter per bad record with its reason,
// tombstones and replays counted.
func TestNodeBadInputDeadLetter(t *testing.T) {
	for _, kind := range []string{"file", "redis-stream", "kafka"} {
		t.Run(kind, func(t *testing.T) {
			dir := t.TempDir()
			writeMixed(t, dir)
			var dlYAML string
			var read func() []deadletter.Record
			switch kind {
			case "file":
				dlYAML = "dead_letter: dead.jsonl\n"
				read = func() []deadletter.Record { return readDeadFile(t, filepath.Join(dir, "dead.jsonl")) }
			case "redis-stream":
				rs := testutil.StartRedis(t)
				dlYAML = fmt.Sprintf("dead_letter: {type: redis-stream, redis: {addr: %q}, stream: dlq}\n", rs.Addr)
				read = func() []deadletter.Record { return readDeadStream(t, rs.Addr, "dlq") }
			case "kafka":
				kc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "dlq"))
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(kc.Close)
				dlYAML = fmt.Sprintf("dead_letter: {type: kafka, kafka: {brokers: [%q], topic: dlq}}\n", kc.ListenAddrs()[0])
				read = func() []deadletter.Record { return readDeadTopic(t, kc.ListenAddrs(), "dlq", len(mixedDeadLetters())) }
			}
			n := start(t, parse(t, dir, "name: mixed\n"+joinYAML+fmt.Sprintf(mixedSource, "")+dlYAML))
			run(t, n)
			diff(t, "mixed", tableMap(n.Table()), mixedWant)
			want := mixedDeadLetters()
			if got := summarize(t, read()); !reflect.DeepEqual(got, want) {
				t.Errorf("dead letters =\n %v\nwant\n %v", got, want)
			}
			st := n.Stats()
			if st.DeadLettered.Load() != int64(len(want)) || st.BadTotal() != int64(len(want)) {
				t.Errorf("dead-lettered %d, rejected %d; want %d", st.DeadLettered.Load(), st.BadTotal(), len(want))
			}
			if st.Tombs.Load() != 1 || st.Duplicates.Load() != 2 || st.Truncates.Load() != 1 || st.SkippedBad.Load() != 0 || st.Unmatched.Load() != 1 {
				t.Errorf("tombstones %d, duplicates %d, truncates %d, skipped %d, unmatched %d; want 1, 2, 1, 0, 1",
					st.Tombs.Load(), st.Duplicates.Load(), st.Truncates.Load(), st.SkippedBad.Load(), st.Unmatched.Load())
			}
			bySrc := st.BadBySource()["cdc"]
			for _, w := range want {
				reason := w[strings.Index(w, ":")+1:]
				if bySrc[reason] != 1 {
					t.Errorf("count of %s in source cdc = %d, want 1", reason, bySrc[reason])
				}
			}
		})
	}
}

// TestNodeBadInputSkip: skipped records are counted, written nowhere, and
// the good results are all there.
func TestNodeBadInputSkip(t *testing.T) {
	dir := t.TempDir()
	writeMixed(t, dir)
	n := start(t, parse(t, dir, "name: mixed\n"+joinYAML+fmt.Sprintf(mixedSource, ", on_bad_input: skip, on_truncate: ignore")+"dead_letter: dead.jsonl\n"))
	run(t, n)
	diff(t, "skip", tableMap(n.Table()), mixedWant)
	want := int64(len(mixedDeadLetters()))
	st := n.Stats()
	if st.SkippedBad.Load() != want || st.BadTotal() != want || st.DeadLettered.Load() != 0 {
		t.Errorf("skipped %d, rejected %d, dead-lettered %d; want %d, %d, 0", st.SkippedBad.Load(), st.BadTotal(), st.DeadLettered.Load(), want, want)
	}
	if rs := readDeadFile(t, filepath.Join(dir, "dead.jsonl")); len(rs) != 0 {
		t.Errorf("skip wrote %d dead letters", len(rs))
	}
}

// TestNodeBadInputDedupOff: with dedup false, the replayed create at a new
// offset is applied again (the domain goes back to its old name).
func TestNodeBadInputDedupOff(t *testing.T) {
	dir := t.TempDir()
	writeMixed(t, dir)
	n := start(t, parse(t, dir, "name: mixed\n"+joinYAML+fmt.Sprintf(mixedSource, ", dedup: false")))
	run(t, n)
	diff(t, "dedup off", tableMap(n.Table()), map[string]string{"1,1": "Egor|M2|Approval"})
	if d := n.Stats().Duplicates.Load(); d != 0 {
		t.Errorf("duplicates = %d with dedup off", d)
	}
}

// TestNodeBadInputDedupPassivated: the last source position per row is
// part of the key's durable state, so a replay is still dropped after the
// key passivated and was reloaded from Redis.
func TestNodeBadInputDedupPassivated(t *testing.T) {
	dir := t.TempDir()
	writeMixed(t, dir)
	rs := testutil.StartRedis(t)
	n := start(t, parse(t, dir, "name: mixed\n"+joinYAML+fmt.Sprintf(mixedSource, ", rate: 100")+
		fmt.Sprintf("state: {store: redis, redis: {addr: %q}, passivate_after: 2ms}\n", rs.Addr)))
	run(t, n)
	diff(t, "dedup passivated", tableMap(n.Table()), mixedWant)
	st := n.Stats()
	if st.Duplicates.Load() != 2 || st.Passivations.Load() == 0 {
		t.Errorf("duplicates %d, passivations %d; want 2 and some", st.Duplicates.Load(), st.Passivations.Load())
	}
}

// TestNodeBadInputFail: the first bad record stops the job with an error
// naming source, position and reason, and no offset at or past it is
// committed.
func TestNodeBadInputFail(t *testing.T) {
	for _, tc := range []struct {
		name, fields string
		offset       int64
		reason       string
	}{
		{"bad input", ", on_bad_input: fail", 5, "not-json"},
		{"truncate", ", on_bad_input: skip, on_truncate: fail", 13, "truncate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeMixed(t, dir)
			// rate: one record per batch, so the records before the bad one
			// are committed.
			n := start(t, parse(t, dir, "name: mixed\n"+joinYAML+fmt.Sprintf(mixedSource, tc.fields+", rate: 500")+
				"state: {store: embedded, path: state.log}\n"))
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			err := n.Run(ctx)
			var be *node.BadInputError
			if !errors.As(err, &be) {
				t.Fatalf("Run = %v, want a *node.BadInputError", err)
			}
			if be.Source != "cdc" || be.Position.Offset != tc.offset || be.Reason != tc.reason {
				t.Errorf("error %+v, want source cdc, offset %d, reason %s", be, tc.offset, tc.reason)
			}
			for _, s := range []string{"cdc", fmt.Sprintf("@%d", tc.offset), tc.reason} {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not name %q", err, s)
				}
			}
			if err := n.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
			st, err := embedded.New(embedded.Options{Path: filepath.Join(dir, "state.log")})
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			committed, err := st.CommittedOffsets(context.Background(), "mixed")
			if err != nil {
				t.Fatal(err)
			}
			if c := committed["cdc/0"]; c != tc.offset-1 {
				t.Errorf("committed offset %d, want %d (every record before the bad one, nothing past it)", c, tc.offset-1)
			}
		})
	}
}

// TestNodeBadInputEventTime checks the event-time classes: a missing key, a
// missing timestamp, a timestamp of the wrong type, not JSON, too large,
// keys escaping unpaired surrogates (bad-utf8: both would be key "\uFFFDa").
func TestNodeBadInputEventTime(t *testing.T) {
	dir := t.TempDir()
	lines := []struct{ line, reason string }{
		{`{"k":"a","ts":1000,"v":"l1"}`, ""},
		{`{"k":"a","ts":`, "not-json"},
		{`{"ts":1500,"v":"nokey"}`, "missing-key"},
		{`{"k":"a","v":"nots"}`, "missing-ts"},
		{`{"k":"a","ts":true,"v":"boolts"}`, "wrong-type"},
		{`{"k":["a"],"ts":1500,"v":"arraykey"}`, "wrong-type"},
		{`{"k":"a","ts":"yesterday","v":"badts"}`, "bad-ts"},
		{`{"k":"a","ts":1600,"v":"` + strings.Repeat("x", 300) + `"}`, "too-large"},
		{`{"k":"\ud800a","ts":1700,"v":"lonehigh"}`, "bad-utf8"},
		{`{"k":"\udc00a","ts":1700,"v":"lonelow"}`, "bad-utf8"},
		{`[1,2]`, "not-object"},
		{`{"k":"a","ts":2000,"v":"l2"}`, ""},
	}
	var left [][]byte
	var want []string
	for i, l := range lines {
		left = append(left, []byte(l.line))
		if l.reason != "" {
			want = append(want, fmt.Sprintf("%d:%s", i+1, l.reason))
		}
	}
	writeLines(t, filepath.Join(dir, "left.jsonl"), left)
	writeLines(t, filepath.Join(dir, "right.jsonl"), [][]byte{[]byte(`{"k":"a","ts":1200,"v":"r1"}`)})
	n := start(t, parse(t, dir, `name: windows
join:
  type: window
  mode: inner
  left:  {name: l, key: k, ts: ts}
  right: {name: r, key: k, ts: ts}
  window: {type: tumbling, size: 10s}
  project: [{name: lv, from: l.v}, {name: rv, from: r.v}]
sources:
  - {name: ls, type: file, path: left.jsonl, side: left, max_record_bytes: 200}
  - {name: rs, type: file, path: right.jsonl, side: right}
sinks: [{type: table}]
dead_letter: dead.jsonl
`))
	run(t, n)
	got := map[string]bool{}
	for _, row := range n.Table() {
		got[fmt.Sprintf("%v|%v", row.Row["lv"], row.Row["rv"])] = true
	}
	if !reflect.DeepEqual(got, map[string]bool{"l1|r1": true, "l2|r1": true}) {
		t.Errorf("pairs = %v", got)
	}
	var gotDL []string
	for _, r := range readDeadFile(t, filepath.Join(dir, "dead.jsonl")) {
		gotDL = append(gotDL, fmt.Sprintf("%d:%s", r.Position.Offset, r.Reason))
	}
	if !reflect.DeepEqual(gotDL, want) {
		t.Errorf("dead letters =\n %v\nwant\n %v", gotDL, want)
	}
}

func readDeadFile(t *testing.T, path string) []deadletter.Record {
	t.Helper()
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []deadletter.Record
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		r, err := deadletter.Decode(sc.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

func readDeadStream(t *testing.T, addr, stream string) []deadletter.Record {
	t.Helper()
	rc := redis.NewClient(&redis.Options{Addr: addr})
	defer rc.Close()
	entries, err := rc.XRange(context.Background(), stream, "-", "+").Result()
	if err != nil {
		t.Fatal(err)
	}
	var out []deadletter.Record
	for _, e := range entries {
		r, err := deadletter.Decode([]byte(e.Values[streamshard.ValueField].(string)))
		if err != nil {
			t.Fatal(err)
		}
		if e.Values[deadletter.ReasonField] != r.Reason {
			t.Errorf("entry reason %v, record %s", e.Values[deadletter.ReasonField], r.Reason)
		}
		out = append(out, r)
	}
	return out
}

func readDeadTopic(t *testing.T, brokers []string, topic string, n int) []deadletter.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out []deadletter.Record
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		if err := fs.Err(); err != nil {
			t.Fatalf("consume after %d of %d: %v", len(out), n, err)
		}
		for _, kr := range fs.Records() {
			r, err := deadletter.Decode(kr.Value)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, r)
		}
	}
	// Nothing more than n.
	short, cancel2 := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel2()
	if fs := cl.PollFetches(short); len(fs.Records()) > 0 {
		t.Errorf("topic %s holds more than %d dead letters", topic, n)
	}
	return out
}
