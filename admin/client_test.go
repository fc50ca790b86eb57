package admin_test

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/joinery/joinery/admin"
)

func TestAdminClient(t *testing.T) {
	fb := &fakeBackend{}
	ts := newTestServer(t, admin.ServerConfig{Backend: fb, Token: "s"})
	ctx := context.Background()
	c, err := admin.NewClient(ts.URL+"/", "s", nil)
	if err != nil {
		t.Fatal(err)
	}
	ms, err := c.Members(ctx)
	if err != nil || len(ms) != 2 {
		t.Fatalf("Members: %v %+v", err, ms)
	}
	if loc, err := c.Locate(ctx, "j", "1"); err != nil || !loc.Active {
		t.Fatalf("Locate: %v %+v", err, loc)
	}
	if ks, err := c.Inspect(ctx, "j", "a/b"); err != nil || ks.Key != "a/b" || len(ks.Rights) != 2 {
		t.Fatalf("Inspect: %v %+v", err, ks)
	}
	if wm, err := c.Watermarks(ctx, "j"); err != nil || wm.Global != 900 {
		t.Fatalf("Watermarks: %v %+v", err, wm)
	}
	if hot, err := c.Hot(ctx, "j", 3); err != nil || len(hot) != 3 {
		t.Fatalf("Hot: %v %+v", err, hot)
	}
	if err := c.Passivate(ctx, "j", "1"); err != nil {
		t.Fatal(err)
	}
	if err := c.Evict(ctx, "j", "1"); err != nil {
		t.Fatal(err)
	}
	if got := fb.Actions(); len(got) != 2 {
		t.Fatalf("actions %v", got)
	}

	_, err = c.Inspect(ctx, "nope", "1")
	var apiErr *admin.APIError
	if !errors.Is(err, admin.ErrNotFound) || !errors.As(err, &apiErr) || apiErr.Status != http.StatusNotFound {
		t.Fatalf("Inspect unknown job: %v", err)
	}

	noTok, _ := admin.NewClient(ts.URL, "", nil)
	if _, err := noTok.Members(ctx); !errors.As(err, &apiErr) || apiErr.Status != http.StatusUnauthorized {
		t.Fatalf("no token: %v", err)
	}

	bare := newTestServer(t, admin.ServerConfig{Backend: onlyBackend{fb}})
	c, _ = admin.NewClient(bare.URL, "", nil)
	if _, err := c.Hot(ctx, "j", 3); !errors.Is(err, errors.ErrUnsupported) {
		t.Fatalf("Hot without extension: %v", err)
	}

	for _, bad := range []string{"ftp://x", "http://", "::"} {
		if _, err := admin.NewClient(bad, "", nil); err == nil {
			t.Errorf("NewClient(%q) succeeded", bad)
		}
	}
	if c, err := admin.NewClient("127.0.0.1:1", "", nil); err != nil || c == nil {
		t.Errorf("NewClient(host:port): %v", err)
	}
}
