package deadletter

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/redis/go-redis/v9"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/joinery/joinery/connopts/redisopts"
	"github.com/joinery/joinery/internal/streamshard"
	"github.com/joinery/joinery/internal/testutil"
	"github.com/joinery/joinery/record"
	"github.com/joinery/joinery/sinks/kafka"
	"github.com/joinery/joinery/sinks/redisstream"
)

var now = time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)

// records are dead letters of every raw shape: text, bytes that are not
// UTF-8, empty, and too large to keep whole.
func records() []Record {
	pos := func(off int64) record.Position { return record.Position{Source: "cdc", Partition: 2, Offset: off} }
	return []Record{
		New("not-json", errors.New("invalid character"), pos(1), []byte(`{"op":`), now),
		New("not-json", errors.New("bad utf-8"), pos(2), []byte{0xff, 0xfe, '{'}, now),
		New("missing-key", nil, pos(3), nil, now),
		New("too-large", errors.New("big"), pos(4), bytes.Repeat([]byte("é"), MaxRawBytes), now),
	}
}

func TestDeadLetterRecord(t *testing.T) {
	rs := records()
	for i, want := range []struct {
		raw       []byte
		base64    bool
		size      int
		truncated bool
	}{
		{[]byte(`{"op":`), false, 6, false},
		{[]byte{0xff, 0xfe, '{'}, true, 3, false},
		{nil, false, 0, false},
		{bytes.Repeat([]byte("é"), MaxRawBytes/2), false, 2 * MaxRawBytes, true},
	} {
		r := rs[i]
		got, err := r.Bytes()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want.raw) || (r.RawBase64 != "") != want.base64 || r.Size != want.size || r.Truncated != want.truncated {
			t.Errorf("record %d: raw %q base64 %v size %d truncated %v; want %+v", i, trunc(got), r.RawBase64 != "", r.Size, r.Truncated, want)
		}
		if r.Source != "cdc" || r.Position.Offset != int64(i+1) || !r.Time.Equal(now) {
			t.Errorf("record %d: %+v", i, r)
		}
		back, err := Decode(r.Marshal())
		if err != nil || !reflect.DeepEqual(back, r) {
			t.Errorf("record %d: round trip = %+v, %v", i, back, err)
		}
	}
}

func trunc(b []byte) []byte {
	if len(b) > 20 {
		return b[:20]
	}
	return b
}

func TestDeadLetterFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "dead.jsonl")
	w, err := OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	want := records()
	if err := w.Write(ctx, want[:2]); err != nil {
		t.Fatal(err)
	}
	if err := w.Write(ctx, want[2:]); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := w.Write(ctx, want); !errors.Is(err, ErrClosed) {
		t.Fatalf("Write after Close = %v", err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var got []Record
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		r, err := Decode(sc.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, r)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("file holds %d records, want %d equal ones", len(got), len(want))
	}
}

// TestDeadLetterFileCutsPartialLine: a partial last line (a writer killed
// mid-write) is cut off when the file is opened again.
func TestDeadLetterFileCutsPartialLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "dead.jsonl")
	want := records()
	whole := append(want[0].Marshal(), '\n')
	partial := want[1].Marshal()[:10]
	if err := os.WriteFile(path, append(whole, partial...), 0o644); err != nil {
		t.Fatal(err)
	}
	w, err := OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if w.Cut() != int64(len(partial)) {
		t.Errorf("Cut() = %d, want %d", w.Cut(), len(partial))
	}
	if err := w.Write(context.Background(), want[1:]); err != nil {
		t.Fatal(err)
	}
	w.Close()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var got []Record
	for _, l := range bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n")) {
		r, err := Decode(l)
		if err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		got = append(got, r)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("file holds %d records, want %d equal ones", len(got), len(want))
	}
}

func TestDeadLetterRedisStream(t *testing.T) {
	rs := testutil.StartRedis(t)
	ctx := context.Background()
	w, err := OpenRedisStream(ctx, redisstream.Config{Options: redisopts.Options{Addr: rs.Addr}, Stream: "dlq"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	want := records()
	if err := w.Write(ctx, want); err != nil {
		t.Fatal(err)
	}
	rc := redis.NewClient(&redis.Options{Addr: rs.Addr})
	defer rc.Close()
	entries, err := rc.XRange(ctx, "dlq", "-", "+").Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != len(want) {
		t.Fatalf("stream has %d entries, want %d", len(entries), len(want))
	}
	for i, e := range entries {
		r, err := Decode([]byte(e.Values[streamshard.ValueField].(string)))
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(r, want[i]) || e.Values[ReasonField] != want[i].Reason ||
			e.Values[SourceField] != "cdc" || e.Values[PositionField] != want[i].Position.String() {
			t.Errorf("entry %d = %v", i, e.Values)
		}
	}
}

func TestDeadLetterKafka(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "dlq"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	w, err := OpenKafka(ctx, kafka.Config{Brokers: c.ListenAddrs(), Topic: "dlq"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	want := records()
	if err := w.Write(ctx, want); err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.ConsumeTopics("dlq"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var got []*kgo.Record
	for len(got) < len(want) {
		fs := cl.PollFetches(cctx)
		if err := fs.Err(); err != nil {
			t.Fatal(err)
		}
		got = append(got, fs.Records()...)
	}
	for i, kr := range got {
		r, err := Decode(kr.Value)
		if err != nil {
			t.Fatal(err)
		}
		headers := map[string]string{}
		for _, h := range kr.Headers {
			headers[h.Key] = string(h.Value)
		}
		if !reflect.DeepEqual(r, want[i]) || string(kr.Key) != want[i].Position.String() ||
			headers[ReasonHeader] != want[i].Reason || headers[SourceHeader] != "cdc" {
			t.Errorf("record %d: key %s headers %v value %s", i, kr.Key, headers, trunc(kr.Value))
		}
	}
}

func FuzzDeadLetterRecord(f *testing.F) {
	for _, s := range []string{"", "{", "\xff\xfe", "é", strings.Repeat("x", 100)} {
		f.Add([]byte(s), "not-json", int64(3))
	}
	f.Fuzz(func(t *testing.T, raw []byte, reason string, off int64) {
		r := New(reason, errors.New("e"), record.Position{Source: "s", Offset: off}, raw, now)
		got, err := r.Bytes()
		if err != nil {
			t.Fatal(err)
		}
		if len(raw) <= MaxRawBytes && !bytes.Equal(got, raw) {
			t.Fatalf("Bytes = %q, want %q", got, raw)
		}
		back, err := Decode(r.Marshal())
		if err != nil {
			t.Fatal(err)
		}
		if !utf8.ValidString(reason) {
			r.Reason = back.Reason // encoding/json replaces invalid UTF-8 in strings
		}
		if !reflect.DeepEqual(back, r) {
			t.Fatalf("round trip = %+v, want %+v", back, r)
		}
	})
}
