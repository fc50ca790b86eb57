// Package console is the read-only web console of a node's admin endpoint,
// mounted at /ui/: one embedded page (plain HTML, CSS and JavaScript, no
// CDN and no build step) that shows the fleet, throughput and latency over
// the last minutes, watermarks and lag per partition, hot keys, and a key
// page (where a key lives, its state and why it has not emitted yet).
//
// The page reads the admin server's own JSON routes (/v1/..., /healthz,
// /readyz) from the browser, sending the token the operator types in (the
// read or the admin token, kept in the tab's sessionStorage) as a bearer
// token. The only data console serves itself is GET /ui/api/samples
// (under APIPrefix): a small in-memory ring of samples (one a second, the
// last five minutes by default) taken from the node's Prometheus registry
// — rates of the joinery_* counters, gauges, and snapshot write latency
// quantiles from the histogram's bucket deltas — so the page can draw
// history without a Prometheus server. Like /metrics it carries no key
// data, but it is served as the console's data: when the node has tokens,
// the admin server asks for the read scope under APIPrefix and leaves the
// page's assets open (they hold no data), so the page can load and ask for
// the token.
//
// console owns the page, its assets and the sampler. It must not change
// anything: it serves GET only, has no passivate or evict buttons, and does
// not import admin (the node builds a Console over its metrics registry and
// hands it to the admin server, which mounts it); it knows the node only
// through a prometheus.Gatherer and the JSON the page fetches.
//
// The page is tested in a real browser (node/console_test.go): headless
// Chromium driven with github.com/chromedp/chromedp, picked because it is a
// pure-Go DevTools protocol client (no Node.js, WebDriver or Selenium
// server) that runs Debian's chromium binary directly.
package console
