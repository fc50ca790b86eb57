package keycore

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"testing"

	"github.com/joinery/joinery/record"
)

// TestCoreOffload drives the same changelog traffic through a Core that
// offloads its durable outbox JSON (Offload after every durable Write)
// and one that does not: their Writes are equal byte for byte, the
// offloading one keeps no written entry's JSON, and an input re-sent
// before it is committed is answered Reload while writes are settled (Gap
// while one is pending); once reloaded from the store it re-sends exactly
// the outputs the other Core does.
func TestCoreOffload(t *testing.T) {
	cfg := &Config{Machine: MachineSpec{CDC: usersDomains}, Parts: true}
	rng := rand.New(rand.NewPCG(7, 7))
	c, shadow := New(cfg, "1"), New(cfg, "1")
	c.Init()
	shadow.Init()
	var st *stored
	var off int64
	for step := range 200 {
		req, _ := randomRequest(rng, &off, 1)
		r, rs := c.Step(req, int64(step)), shadow.Step(req, int64(step))
		if r.Err != nil || rs.Err != nil {
			t.Fatalf("step %d: %v, %v", step, r.Err, rs.Err)
		}
		if (r.Write == nil) != (rs.Write == nil) {
			t.Fatalf("step %d: write %v, shadow's %v", step, r.Write != nil, rs.Write != nil)
		}
		if r.Write == nil {
			continue
		}
		if a, b := mustJSON(t, r.Write), mustJSON(t, rs.Write); !bytes.Equal(a, b) {
			t.Fatalf("step %d: write\n%s\nshadow's\n%s", step, a, b)
		}
		st = st.apply(r.Write)
		c.Durable()
		shadow.Durable()
		c.Offload()
		for i := range c.outbox {
			if e := &c.outbox[i]; e.enc != nil || e.Outputs != nil {
				t.Fatalf("step %d: outbox entry %d kept its JSON after a durable write", step, e.id)
			}
		}
	}
	if c.OutboxLen() == 0 {
		t.Fatal("nothing left in the outbox to re-send: the test proves nothing")
	}
	// Re-send the newest input, not committed: its outputs are offloaded.
	e := c.outbox[len(c.outbox)-1]
	resend := []Event{{Pos: record.Position{Source: "s", Offset: e.Offset}, Op: record.OpCreate,
		After: record.Row{"id": json.Number("1")}}}
	req := &Request{Events: resend}
	c.pending++ // a write in flight: not yet
	if r := c.Step(req, 1); !r.Gap {
		t.Fatalf("re-sent with a write pending: %+v, want Gap", r)
	}
	c.pending--
	if r := c.Step(req, 1); !r.Reload {
		t.Fatalf("re-sent an offloaded input: %+v, want Reload", r)
	}
	again := New(cfg, "1")
	if err := again.Restore(st.offsets, st.loaded()); err != nil {
		t.Fatal(err)
	}
	got, want := again.Step(req, 1), shadow.Step(req, 1)
	if got.Skipped != 1 || len(want.Outputs) == 0 {
		t.Fatalf("re-sent after the reload: skipped %d, shadow's outputs %d", got.Skipped, len(want.Outputs))
	}
	if a, b := mustJSON(t, got.Outputs), mustJSON(t, want.Outputs); !bytes.Equal(a, b) {
		t.Fatalf("re-sent outputs\n%s\nwant\n%s", a, b)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
