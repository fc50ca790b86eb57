package node_test

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/redis/go-redis/v9"

	"github.com/joinery/joinery/admin"
	"github.com/joinery/joinery/console"
	"github.com/joinery/joinery/internal/testutil"
	"github.com/joinery/joinery/job"
)

var screenshots = flag.Bool("screenshots", false, "TestConsole*: write the console's screenshots to ../docs/console-*.png")

// browser starts a headless Chromium for the test and returns its context.
// Without Chromium the test is skipped, except under CI=true, where it
// fails (CI installs it: .ci/run, scripts/ensure-deps.sh).
func browser(t *testing.T) context.Context {
	t.Helper()
	path := os.Getenv("JOINERY_CHROMIUM")
	if path == "" {
		path = "/usr/bin/chromium"
	}
	if _, err := os.Stat(path); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("chromium is required by the console tests in CI: %v", err)
		}
		t.Skipf("no chromium at %s (Debian: apt-get install chromium, or set JOINERY_CHROMIUM)", path)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1360, 900),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(actx, chromedp.WithErrorf(t.Logf))
	t.Cleanup(func() { cancelTab(); cancelAlloc() })
	if err := chromedp.Do(ctx); err != nil { // the first run starts the browser, for the context's life
		t.Fatalf("start chromium: %v", err)
	}
	return ctx
}

// waitText waits until the text of the element sel holds every one of want,
// and returns that text.
func waitText(t *testing.T, ctx context.Context, sel string, want ...string) string {
	t.Helper()
	deadline := time.Now().Add(45 * time.Second)
	var text string
	for {
		wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		var err error
		text, err = chromedp.Run(wctx, chromedp.Text(chromedp.CSS(sel)))
		cancel()
		missing := ""
		for _, w := range want {
			if !strings.Contains(text, w) {
				missing = w
				break
			}
		}
		if err == nil && missing == "" {
			t.Logf("%s shows %q after %v", sel, want, time.Since(deadline.Add(-45*time.Second)).Round(time.Millisecond))
			return text
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: text %q (err %v) does not contain %q", sel, text, err, missing)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// screenshot writes the page as ../docs/console-<name>.png under -screenshots.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	if !*screenshots {
		return
	}
	time.Sleep(500 * time.Millisecond)                          // let the last render settle
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)) // 100: PNG
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	path := filepath.Join("..", "docs", "console-"+name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s (%d bytes)", path, len(png))
}

// TestConsole runs the users ⋈ domains example on one node with an admin
// token, opens the console in headless Chromium, and checks what it shows:
// the API refuses it until the token is typed in; then the fleet table
// lists this node, alive, with its key count and the source it reads; and a
// key typed into the box shows the user's row, its two domain rows, its
// applied offset and why it has nothing pending.
func TestConsole(t *testing.T) {
	ctx := browser(t)
	spec, err := job.Load("../examples/users-domains/job.yaml")
	if err != nil {
		t.Fatal(err)
	}
	spec.Sources[0].Rate = 0
	if *screenshots {
		spec.Sources[0].Rate = 6 // spread the records over a few samples, for the charts
	}
	spec.Admin = job.Admin{Addr: "127.0.0.1:0", Token: "s3cret"}
	n := start(t, spec)
	run(t, n)
	base := "http://" + n.AdminAddr()
	c, err := admin.NewClient(base, "s3cret", nil)
	if err != nil {
		t.Fatal(err)
	}
	ms, err := c.Members(context.Background())
	if err != nil || len(ms) != 1 {
		t.Fatalf("members = %+v, %v", ms, err)
	}

	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/ui")); err != nil {
		t.Fatal(err)
	}
	waitText(t, ctx, "#error", "missing or wrong bearer token", "token box")
	if err := chromedp.Do(ctx, chromedp.SendKeys(chromedp.CSS("#token"), "s3cret"+kb.Enter)); err != nil {
		t.Fatal(err)
	}
	fleet := waitText(t, ctx, "#members tbody", n.Address(), "this node", "alive")
	waitText(t, ctx, "#members tbody tr.self td:nth-child(4)", "cdc")
	keys, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#members tbody tr.self td:nth-child(3)")))
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprint(ms[0].KeysActive); keys != want || ms[0].KeysActive < 4 {
		t.Errorf("fleet table: keys active %q, want %s (at least 4); table %q", keys, want, fleet)
	}
	if job := waitText(t, ctx, "#throughput-sub", "job users-domains"); job == "" {
		t.Error("no job in the throughput section")
	}
	waitText(t, ctx, "#wm-note", "changelog")
	// The samples behind the charts saw the records and the snapshot writes.
	testutil.WaitFor(t, 30*time.Second, func() error {
		resp, err := http.Get(base + "/ui/api/samples")
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		var got console.Samples
		if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
			return err
		}
		in, writes, p99 := 0.0, 0.0, false
		for _, x := range got.Samples {
			in += x.Jobs["users-domains"].InPerSec
			writes += x.SnapshotWritesPerSec
			p99 = p99 || x.SnapshotP99Ms != nil
		}
		if in == 0 || writes == 0 || !p99 {
			return fmt.Errorf("samples: %v records/s, %v snapshot writes/s, a p99: %v in %d samples", in, writes, p99, len(got.Samples))
		}
		return nil
	})
	screenshot(t, ctx, "fleet")

	if err := chromedp.Do(ctx, chromedp.SendKeys(chromedp.CSS("#key"), "1"+kb.Enter)); err != nil {
		t.Fatal(err)
	}
	left := waitText(t, ctx, "#key-left-rows", "firstname", "Egor", "Myasnikov")
	rights := waitText(t, ctx, "#key-right-rows", "domain_name", "Approval", "Audit")
	if strings.Contains(rights, "Rejection") {
		t.Errorf("key 1's domain rows %q hold Rejection, which the changes deleted", rights)
	}
	nRights, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('#key-right-rows tbody tr').length`))
	if err != nil {
		t.Fatal(err)
	}
	if nRights != 2 {
		t.Errorf("key 1 shows %d domain rows (%q), want 2", nRights, rights)
	}
	waitText(t, ctx, "#key-offsets-table", "cdc/0", "19")
	waitText(t, ctx, "#key-location", n.Address(), "active")
	waitText(t, ctx, "#why-note", "changelog (cdc) join emits every change at once")
	hash, err := chromedp.Run(ctx, chromedp.Evaluate[string](`location.hash`))
	if err != nil {
		t.Fatal(err)
	}
	if hash != "#/jobs/users-domains/keys/1" {
		t.Errorf("key page URL hash = %q, want #/jobs/users-domains/keys/1", hash)
	}
	t.Logf("key 1 on the page: left %q, rights %q", left, rights)
	screenshot(t, ctx, "key")

	// A key without state says so instead of showing an empty page.
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(document.querySelector('#key').value = '', true)`)); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.SendKeys(chromedp.CSS("#key"), "999"+kb.Enter)); err != nil {
		t.Fatal(err)
	}
	waitText(t, ctx, "#key-error", `key "999" has no state`)
}

// TestConsoleEventTime runs a window join from two Redis Streams where the
// left stream lags (as TestNodeKeyWhy does) and checks the console's
// event-time views: the watermarks table marks ls/0 as the partition
// holding the job back, the fleet table shows both stream leases held, and
// key a's page shows its window state, its timer and why it waits: the
// window fires at watermark base+9999, 8 s ahead of the job's watermark.
func TestConsoleEventTime(t *testing.T) {
	ctx := browser(t)
	rs := testutil.StartRedis(t)
	rc := redis.NewClient(&redis.Options{Addr: rs.Addr})
	defer rc.Close()
	t0 := (time.Now().UnixMilli()/10_000 - 6) * 10_000 // a minute ago, at a 10 s window's start
	at := func(ms int64) string { return time.UnixMilli(t0+ms).UTC().Format("2006-01-02 15:04:05.000") + " UTC" }
	add := func(stream, key string, ts int64, v string) {
		t.Helper()
		val := fmt.Sprintf(`{"k":%q,"ts":%d,"v":%q}`, key, t0+ts, v)
		if err := rc.XAdd(context.Background(), &redis.XAddArgs{Stream: stream, Values: map[string]any{"value": val}}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	add("ls", "a", 1000, "l1")
	add("ls", "b", 3000, "l2")
	add("rs", "a", 2000, "r1")
	for ts := int64(4000); ts <= 25000; ts += 3000 {
		add("rs", "b", ts, fmt.Sprint("r", ts))
	}
	n := start(t, parse(t, t.TempDir(), fmt.Sprintf(`name: clicks
join:
  type: window
  left:  {name: l, key: k, ts: ts}
  right: {name: r, key: k, ts: ts}
  window: {type: tumbling, size: 10s}
state: {store: redis, redis: {addr: %[1]q}}
sources:
  - {name: ls, type: redis-stream, redis: {addr: %[1]q}, stream: ls, group: g, side: left, watermark: {max_out_of_orderness: 1s}}
  - {name: rs, type: redis-stream, redis: {addr: %[1]q}, stream: rs, group: g, side: right, watermark: {max_out_of_orderness: 1s}}
sinks: [{type: table}]
admin: {addr: "127.0.0.1:0"}
`, rs.Addr)))
	runCtx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- n.Run(runCtx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("run: %v", err)
		}
	}()
	base := "http://" + n.AdminAddr()
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/ui/")); err != nil {
		t.Fatal(err)
	}
	held := waitText(t, ctx, "#wm-table tbody tr.holding", "ls/0", "holds the job back", at(1999), "23 s")
	all := waitText(t, ctx, "#wm-table tbody", "rs/0", at(23999))
	if strings.Count(all, "holds the job back") != 1 {
		t.Errorf("watermarks table %q: want exactly one partition marked as holding the job back", all)
	}
	t.Logf("holding row: %q", held)
	waitText(t, ctx, "#wm-sub", "combined watermark "+at(1999))
	waitText(t, ctx, "#members tbody tr.self td:nth-child(4)", "ls ✓ lease", "rs ✓ lease")
	waitText(t, ctx, "#members tbody tr.self td:nth-child(5)", "ls/0", "rs/0")
	waitText(t, ctx, "#hot-table tbody", "b")
	screenshot(t, ctx, "watermarks")

	if err := chromedp.Do(ctx, chromedp.SendKeys(chromedp.CSS("#key"), "a"+kb.Enter)); err != nil {
		t.Fatal(err)
	}
	waitText(t, ctx, "#key-timed", "Event-time join state", `"l1"`, `"r1"`)
	waitText(t, ctx, "#key-timers", at(9999))
	waits := waitText(t, ctx, "#why-waits", "fires: 1 left, 1 right", at(9999), "8 s")
	waitText(t, ctx, "#why", "held back by", "ls/0")
	// Redis stream offsets are beyond 2^53: the page shows them exactly.
	c, err := admin.NewClient(base, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	ks, err := c.Inspect(context.Background(), "clicks", "a")
	if err != nil {
		t.Fatal(err)
	}
	waitText(t, ctx, "#key-offsets-table", "ls/0", fmt.Sprint(ks.Offsets["ls/0"]), "rs/0", fmt.Sprint(ks.Offsets["rs/0"]))
	if hidden, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.querySelector('#key-sides').hidden`)); err != nil || !hidden {
		t.Errorf("the changelog join's left/right sections show for a window join (hidden %v, %v)", hidden, err)
	}
	t.Logf("why: %q", waits)
	screenshot(t, ctx, "why")
}
