package node_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/joinery/joinery/admin"
	"github.com/joinery/joinery/job"
)

// TestNodeAdmin runs the example with the admin endpoint on and inspects a
// key, its location and the metrics through the same client joinctl uses.
func TestNodeAdmin(t *testing.T) {
	spec, err := job.Load("../examples/users-domains/job.yaml")
	if err != nil {
		t.Fatal(err)
	}
	spec.Sources[0].Rate = 0
	spec.Admin = job.Admin{Addr: "127.0.0.1:0", Token: "s3cret"}
	n := start(t, spec)
	run(t, n)
	base := "http://" + n.AdminAddr()
	c, err := admin.NewClient(base, "s3cret", nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	ms, err := c.Members(ctx)
	if err != nil || len(ms) != 1 || !ms[0].Self || ms[0].KeysActive < 4 {
		t.Fatalf("members = %+v, %v", ms, err)
	}
	loc, err := c.Locate(ctx, "users-domains", "1")
	if err != nil || loc.Node != n.Address() {
		t.Fatalf("locate = %+v, %v; want node %s", loc, err, n.Address())
	}
	ks, err := c.Inspect(ctx, "users-domains", "1")
	if err != nil {
		t.Fatal(err)
	}
	var left map[string]any
	_ = json.Unmarshal(ks.Left, &left)
	if left["lastname"] != "Myasnikov" || len(ks.Rights) != 2 || ks.Offsets["cdc/0"] != 19 || ks.Epoch == 0 {
		t.Errorf("inspect key 1 = left %s, %d rights, offsets %v, epoch %d; want Egor Myasnikov with domains 1 and 8, offset 19, an epoch",
			ks.Left, len(ks.Rights), ks.Offsets, ks.Epoch)
	}
	if _, err := c.Inspect(ctx, "other-job", "1"); !errors.Is(err, admin.ErrNotFound) {
		t.Errorf("inspect of another job: %v, want not found", err)
	}
	bad, err := admin.NewClient(base, "wrong", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bad.Members(ctx); err == nil {
		t.Error("a wrong token was accepted")
	}
	for path, want := range map[string]string{
		"/healthz": "ok",
		"/readyz":  "",
		"/metrics": `joinery_records_in_total{job="users-domains",source="cdc"} 19`,
	} {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(body), want) {
			t.Errorf("GET %s = %d %q, want 200 containing %q", path, resp.StatusCode, body, want)
		}
	}
	if err := c.Passivate(ctx, "users-domains", "1"); err != nil {
		t.Errorf("passivate: %v", err)
	}
}
