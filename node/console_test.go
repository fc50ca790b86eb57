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
	"github.com/joinery/joinery/internal/cdcgen"
	"github.com/joinery/joinery/internal/testutil"
	"github.com/joinery/joinery/job"
	"github.com/joinery/joinery/node"
)

var screenshots = flag.Bool("screenshots", false, "TestConsole*: write the console's screenshots to ../docs/operations/console-*.png")

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

// screenshot writes the page as ../docs/operations/console-<name>.png under -screenshots.
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
	path := filepath.Join("..", "docs", "operations", "console-"+name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s (%d bytes)", path, len(png))
}

// TestConsole runs the users ⋈ domains example on one node with admin,
// read and metrics tokens, opens the console in headless Chromium, and
// checks what it shows: the page loads but the API (its samples included)
// refuses it until the read token is typed in, and the token survives a
// reload (session storage); then the fleet table
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
	spec.Admin.ReadToken, spec.Admin.MetricsToken = "r34d", "m3tr1cs"
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
	waitText(t, ctx, "#error", "samples: missing or wrong bearer token", "members: missing or wrong bearer token", "token box")
	if err := chromedp.Do(ctx, chromedp.SendKeys(chromedp.CSS("#token"), "r34d"+kb.Enter)); err != nil {
		t.Fatal(err)
	}
	waitText(t, ctx, "#members tbody", n.Address(), "this node", "alive")
	if err := chromedp.Do(ctx, chromedp.Reload()); err != nil {
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
		resp, err := samplesAs(base, "r34d")
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("samples with the read token: %s", resp.Status)
		}
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

	// The samples need the read scope (the admin token has it); the
	// metrics token only opens /metrics.
	for _, c := range []struct {
		token string
		code  int
	}{{"", 401}, {"m3tr1cs", 403}, {"s3cret", 200}} {
		resp, err := samplesAs(base, c.token)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.code {
			t.Errorf("GET /ui/api/samples with token %q = %s, want %d", c.token, resp.Status, c.code)
		}
	}

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

// samplesAs gets the console's samples with token ("" for none).
func samplesAs(base, token string) (*http.Response, error) {
	req, err := http.NewRequest("GET", base+"/ui/api/samples", nil)
	if err != nil {
		return nil, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	return http.DefaultClient.Do(req)
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

// TestConsoleFleet runs a three-node fleet on Redis and opens the first
// node's console: the fleet table lists all three members alive, this node
// first, each with its own key count and an uptime (gossiped by the others),
// the hot keys section lists the
// keys its source routed, and a key held by another member shows that
// member as its owner and as the one that answered.
func TestConsoleFleet(t *testing.T) {
	ctx := browser(t)
	rs := testutil.StartRedis(t)
	h := cdcgen.Generate(cdcgen.Config{Seed: 7, Users: 30, Domains: 90, Changes: 1500})
	dir := t.TempDir()
	writeLines(t, filepath.Join(dir, "in.jsonl"), h.Lines)
	rate := ""
	if *screenshots {
		rate = ", rate: 300" // a few seconds of samples, for the charts
	}
	state := fmt.Sprintf("state: {store: redis, redis: {addr: %q}}\n", rs.Addr)
	n1 := start(t, parse(t, dir, "name: fleet\n"+joinYAML+state+`
sources: [{name: cdc, type: file, path: in.jsonl, tables: {users: left, domains: right}`+rate+`}]
sinks: [{type: table}]
cluster: {node_name: n1}
admin: {addr: "127.0.0.1:0"}
`))
	seeds := fmt.Sprintf("cluster: {seeds: [%q], node_name: %%s}\n", n1.GossipAddr())
	n2 := start(t, parse(t, dir, "name: fleet\n"+joinYAML+state+fmt.Sprintf(seeds, "n2")))
	n3 := start(t, parse(t, dir, "name: fleet\n"+joinYAML+state+fmt.Sprintf(seeds, "n3")))
	testutil.WaitFor(t, 30*time.Second, func() error {
		if m := len(n1.Members()); m != 3 {
			return fmt.Errorf("n1 sees %d members", m)
		}
		return nil
	})
	run(t, n1)

	base := "http://" + n1.AdminAddr()
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/ui/")); err != nil {
		t.Fatal(err)
	}
	fleet := waitText(t, ctx, "#members tbody", "n1", "n2", "n3", n1.Address(), n2.Address(), n3.Address())
	waitText(t, ctx, "#fleet-sub", "3 of 3 members alive")
	// Every member's key count is the one it has (the others' gossiped,
	// within cluster.Config.StatsInterval, 5 s; the page polls).
	byName := map[string]*node.Node{"n1": n1, "n2": n2, "n3": n3}
	var rows []string
	testutil.WaitFor(t, 30*time.Second, func() error {
		var err error
		rows, err = chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll('#members tbody tr')].map(r => r.cells[0].innerText + '|' + r.cells[1].innerText + '|' + r.cells[2].innerText + '|' + r.cells[5].innerText)`))
		if err != nil {
			return err
		}
		if len(rows) != 3 || !strings.HasPrefix(rows[0], "n1") || !strings.Contains(rows[0], "this node") {
			return fmt.Errorf("fleet rows %q: want three, n1 (this node) first", rows)
		}
		for _, r := range rows {
			f := strings.Split(r, "|")
			var n *node.Node
			for name, x := range byName {
				if strings.HasPrefix(f[0], name) {
					n = x
				}
			}
			if n == nil {
				return fmt.Errorf("fleet row %q: none of n1, n2, n3", r)
			}
			if want := fmt.Sprint(n.Stats().ActiveKeys()); f[1] != "alive" || f[2] != want || f[2] == "0" || f[3] == "–" {
				return fmt.Errorf("fleet row %q: want alive, %s keys (not 0) and an uptime", r, want)
			}
		}
		return nil
	})
	t.Logf("fleet rows once gossiped: %q", rows)
	// The hot keys of the last complete 10 s window: the keys n1's source routed.
	waitText(t, ctx, "#hot-table tbody tr", "")
	hot, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('#hot-table tbody tr').length`))
	if err != nil || hot != 10 {
		t.Errorf("hot keys: %d rows (%v), want the top 10 of 30 keys", hot, err)
	}
	t.Logf("fleet: %q", fleet)
	screenshot(t, ctx, "fleet")

	// A key another member holds: its page names that member.
	var key string
	var holder *node.Node
	for uid := 1; uid <= 30 && holder == nil; uid++ {
		ks, err := n1.Inspect(joinsKey(uid))
		if err != nil {
			continue
		}
		for _, n := range []*node.Node{n2, n3} {
			if ks.Node == n.Address() {
				key, holder = fmt.Sprint(uid), n
			}
		}
	}
	if holder == nil {
		t.Fatal("no key is held by n2 or n3")
	}
	if err := chromedp.Do(ctx, chromedp.SendKeys(chromedp.CSS("#key"), key+kb.Enter)); err != nil {
		t.Fatal(err)
	}
	loc := waitText(t, ctx, "#key-location", "owner", "answered by")
	if strings.Count(loc, holder.Address()) != 2 || strings.Contains(loc, n1.Address()) {
		t.Errorf("key %s's location %q: want %s as owner and answerer, not %s", key, loc, holder.Address(), n1.Address())
	}
}
