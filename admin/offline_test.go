package admin_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/joinery/joinery/admin"
	"github.com/joinery/joinery/internal/testutil/statetest"
	"github.com/joinery/joinery/joins"
	"github.com/joinery/joinery/persistence"
	"github.com/joinery/joinery/persistence/embedded"
	"github.com/joinery/joinery/record"
)

var offlineSpec = &joins.CDCSpec{
	Type:  joins.LeftOuter,
	Left:  joins.SideSpec{Name: "users", PK: "id", JoinOn: "id"},
	Right: joins.SideSpec{Name: "domains", PK: "id", JoinOn: "user_id"},
}

func TestAdminInspectOffline(t *testing.T) {
	ctx := context.Background()
	store, err := embedded.New(embedded.Options{Path: t.TempDir() + "/state.log"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })

	// Build key 1's state with the real join state machine, as a key actor does.
	cdc := joins.NewCDC(offlineSpec)
	for i, c := range []record.Change{
		{Op: record.OpCreate, After: record.Row{"id": 1, "name": "ann <a&b>"}},
		{Op: record.OpCreate, After: record.Row{"id": 11, "user_id": 1, "domain": "b.example"}},
		{Op: record.OpCreate, After: record.Row{"id": 10, "user_id": 1, "domain": "a.example"}},
	} {
		side := record.Left
		if i > 0 {
			side = record.Right
		}
		evs, err := offlineSpec.Route(side, c)
		if err != nil || len(evs) != 1 || evs[0].Key != "1" {
			t.Fatalf("route: %v %+v", err, evs)
		}
		cdc.OnEvent(evs[0], nil)
	}
	if err := store.Save(ctx, []persistence.Snapshot{{Job: "j", Key: "1", State: statetest.JoinState(t, cdc.Snapshot()), Offsets: record.OffsetsOf(map[string]int64{"cdc/0": 2})}}); err != nil {
		t.Fatal(err)
	}

	ks, err := admin.InspectOffline(ctx, store, offlineSpec, "j", "1")
	if err != nil {
		t.Fatal(err)
	}
	if ks.Job != "j" || ks.Key != "1" || ks.Node != "" || ks.Offsets["cdc/0"] != 2 {
		t.Fatalf("state %+v", ks)
	}
	if got, want := string(ks.Left), `{"id":1,"name":"ann <a&b>"}`; got != want {
		t.Errorf("left %s, want %s", got, want)
	}
	if len(ks.Rights) != 2 || string(ks.Rights[0]) != `{"domain":"a.example","id":10,"user_id":1}` ||
		string(ks.Rights[1]) != `{"domain":"b.example","id":11,"user_id":1}` {
		t.Errorf("rights %s", ks.Rights)
	}

	_, err = admin.InspectOffline(ctx, store, offlineSpec, "j", "2")
	if !errors.Is(err, admin.ErrNotFound) || !errors.Is(err, persistence.ErrNotFound) {
		t.Errorf("missing key: %v", err)
	}
	// A spec whose primary keys disagree with the rows does not decode them.
	wrong := &joins.CDCSpec{Left: joins.SideSpec{Name: "users", PK: "uid", JoinOn: "id"}, Right: offlineSpec.Right}
	if _, err := admin.InspectOffline(ctx, store, wrong, "j", "1"); !errors.Is(err, joins.ErrBadSnapshot) {
		t.Errorf("wrong spec: %v", err)
	}
	if _, err := admin.InspectOffline(ctx, store, nil, "j", "1"); err == nil {
		t.Error("a changelog snapshot read as an event-time one")
	}

	// An event-time join's key: its buffers come back as JSON.
	wj := joins.NewWindowJoin(&joins.WindowJoinSpec{Assigner: joins.Tumbling(10, 0), Left: "l", Right: "r"})
	var fx joins.Effects
	wj.OnElement(joins.Element{Side: record.Left, Ts: 3, Row: record.Row{"v": "x"}, Pos: record.Position{Source: "l", Offset: 7}}, -1<<63, &fx)
	if err := store.Save(ctx, []persistence.Snapshot{{Job: "w", Key: "k", State: statetest.JoinState(t, wj.Snapshot()), Offsets: record.OffsetsOf(map[string]int64{"l/0": 7})}}); err != nil {
		t.Fatal(err)
	}
	ks, err = admin.InspectOffline(ctx, store, nil, "w", "k")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(ks.State), `"v":"x"`) || ks.Offsets["l/0"] != 7 {
		t.Errorf("event-time key state %s, offsets %v", ks.State, ks.Offsets)
	}
}
