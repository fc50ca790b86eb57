package console

import (
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// registry is a real Prometheus registry with the series the sampler reads,
// named and labelled as admin.Metrics names them.
type registry struct {
	reg      *prometheus.Registry
	in       *prometheus.CounterVec
	out      *prometheus.CounterVec
	keys     *prometheus.GaugeVec
	lag      *prometheus.GaugeVec
	reading  *prometheus.GaugeVec
	snapshot prometheus.Histogram
}

func newRegistry() *registry {
	r := &registry{
		reg:      prometheus.NewRegistry(),
		in:       prometheus.NewCounterVec(prometheus.CounterOpts{Name: mRecordsIn}, []string{"job", "source"}),
		out:      prometheus.NewCounterVec(prometheus.CounterOpts{Name: mOutputs}, []string{"job", "sink"}),
		keys:     prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: mKeysActive}, []string{"job"}),
		lag:      prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: mWmLag}, []string{"job", "source", "partition"}),
		reading:  prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: mReading}, []string{"job", "source"}),
		snapshot: prometheus.NewHistogram(prometheus.HistogramOpts{Name: mSnapshot, Buckets: []float64{0.001, 0.002, 0.004, 0.008}}),
	}
	r.reg.MustRegister(r.in, r.out, r.keys, r.lag, r.reading, r.snapshot)
	return r
}

func TestSamplerRatesAndGauges(t *testing.T) {
	r := newRegistry()
	s := newSampler(r.reg, time.Second, 3)
	t0 := time.Unix(1_700_000_000, 0)
	s.sample(t0) // the first reading only sets the baseline
	if got := s.samples(); len(got.Samples) != 0 || len(got.Jobs) != 0 {
		t.Fatalf("after one reading: %+v, want no samples and no jobs", got)
	}
	r.in.WithLabelValues("j", "a").Add(30)
	r.in.WithLabelValues("j", "b").Add(10)
	r.out.WithLabelValues("j", "all").Add(8)
	r.keys.WithLabelValues("j").Set(5)
	r.lag.WithLabelValues("j", "a", "a/0").Set(1.5)
	r.lag.WithLabelValues("j", "a", "a/1").Set(4)
	r.reading.WithLabelValues("j", "b").Set(0)
	r.in.WithLabelValues("k", "x").Add(1)
	for range 90 { // 90 writes of 1.5 ms, 10 of 7 ms: p50 in (1,2] ms, p99 in (4,8] ms
		r.snapshot.Observe(0.0015)
	}
	for range 10 {
		r.snapshot.Observe(0.007)
	}
	s.sample(t0.Add(2 * time.Second))

	got := s.samples()
	if len(got.Samples) != 1 {
		t.Fatalf("samples = %+v, want 1", got.Samples)
	}
	x := got.Samples[0]
	j := x.Jobs["j"]
	if j.InPerSec != 20 || j.OutPerSec != 4 || j.KeysActive != 5 || j.WatermarkLagSec == nil || *j.WatermarkLagSec != 4 {
		t.Errorf("job j = %+v (lag %v), want 20 in/s, 4 out/s, 5 keys, lag 4 s (the larger)", j, j.WatermarkLagSec)
	}
	if k := x.Jobs["k"]; k.InPerSec != 0.5 || k.WatermarkLagSec != nil {
		t.Errorf("job k = %+v, want 0.5 in/s and no watermark lag", k)
	}
	if x.SnapshotWritesPerSec != 50 || x.SnapshotP50Ms == nil || x.SnapshotP99Ms == nil {
		t.Fatalf("snapshot: %v writes/s, p50 %v, p99 %v; want 50/s and both quantiles", x.SnapshotWritesPerSec, x.SnapshotP50Ms, x.SnapshotP99Ms)
	}
	if p := *x.SnapshotP50Ms; p <= 1 || p > 2 {
		t.Errorf("p50 = %v ms, want in (1, 2]", p)
	}
	if p := *x.SnapshotP99Ms; p <= 4 || p > 8 {
		t.Errorf("p99 = %v ms, want in (4, 8]", p)
	}
	if strings.Join(got.Jobs, ",") != "j,k" {
		t.Errorf("jobs = %v, want [j k]", got.Jobs)
	}
	wantSrc := []Source{{"j", "a", false, true}, {"j", "b", true, false}, {"k", "x", false, true}}
	if len(got.Sources) != len(wantSrc) {
		t.Fatalf("sources = %+v, want %+v", got.Sources, wantSrc)
	}
	for i := range wantSrc {
		if got.Sources[i] != wantSrc[i] {
			t.Errorf("sources[%d] = %+v, want %+v", i, got.Sources[i], wantSrc[i])
		}
	}

	// A quiet interval: rates drop to 0, no latency quantiles.
	s.sample(t0.Add(3 * time.Second))
	q := s.samples().Samples[1]
	if q.Jobs["j"].InPerSec != 0 || q.SnapshotWritesPerSec != 0 || q.SnapshotP50Ms != nil {
		t.Errorf("quiet sample = %+v, want zero rates and no quantiles", q)
	}
}

func TestSamplerRing(t *testing.T) {
	r := newRegistry()
	s := newSampler(r.reg, time.Second, 3)
	t0 := time.Unix(1_700_000_000, 0)
	for i := range 6 { // a baseline and five samples into a ring of three
		r.in.WithLabelValues("j", "a").Add(float64(i))
		s.sample(t0.Add(time.Duration(i) * time.Second))
	}
	got := s.samples().Samples
	if len(got) != 3 {
		t.Fatalf("%d samples, want 3", len(got))
	}
	for i, x := range got { // the newest three, oldest first: rates 3, 4, 5
		if want := float64(i + 3); x.Jobs["j"].InPerSec != want || x.T != t0.Add(time.Duration(i+3)*time.Second).UnixMilli() {
			t.Errorf("sample %d = %v in/s at %d, want %v", i, x.Jobs["j"].InPerSec, x.T, want)
		}
	}
}

func TestRate(t *testing.T) {
	for _, c := range []struct {
		name string
		a, b float64
		dt   time.Duration
		want float64
	}{
		{"rising", 10, 40, 3 * time.Second, 10},
		{"flat", 7, 7, time.Second, 0},
		{"reset counts all of the new value", 100, 6, 2 * time.Second, 3},
	} {
		if got := rate(c.a, c.b, c.dt); got != c.want {
			t.Errorf("%s: rate(%v, %v, %v) = %v, want %v", c.name, c.a, c.b, c.dt, got, c.want)
		}
	}
}

func TestQuantile(t *testing.T) {
	h := func(count float64, cum ...float64) histogram {
		return histogram{count: count, uppers: []float64{1, 2, 4}, cumulus: cum}
	}
	for _, c := range []struct {
		name string
		h    histogram
		q    float64
		want float64
		ok   bool
	}{
		{"empty", h(0, 0, 0, 0), 0.5, 0, false},
		{"first bucket interpolates from 0", h(10, 10, 10, 10), 0.5, 0.5, true},
		{"middle bucket", h(10, 0, 10, 10), 0.5, 1.5, true},
		{"upper half", h(4, 2, 2, 4), 0.75, 3, true},
		{"rank in +Inf bucket gives the largest bound", h(10, 1, 2, 3), 0.99, 4, true},
	} {
		got, ok := c.h.quantile(c.q)
		if ok != c.ok || math.Abs(got-c.want) > 1e-9 {
			t.Errorf("%s: quantile(%v) = %v, %v; want %v, %v", c.name, c.q, got, ok, c.want, c.ok)
		}
	}
	a := histogram{count: 5, uppers: []float64{1, 2}, cumulus: []float64{3, 5}}
	b := histogram{count: 9, uppers: []float64{1, 2}, cumulus: []float64{3, 8}}
	if d := b.minus(a); d.count != 4 || d.cumulus[0] != 0 || d.cumulus[1] != 3 {
		t.Errorf("b.minus(a) = %+v, want 4 observations, cumulative [0 3]", d)
	}
	if d := a.minus(b); d.count != a.count { // went down: a reset, all of a counts
		t.Errorf("a.minus(b) after a reset = %+v, want a", d)
	}
}

func TestHandler(t *testing.T) {
	r := newRegistry()
	c := New(r.reg, Options{Interval: 10 * time.Millisecond})
	defer c.Close()
	r.in.WithLabelValues("j", "a").Add(1)
	mux := http.NewServeMux()
	mux.Handle("GET "+Prefix, c)
	srv := httptest.NewServer(mux)
	defer srv.Close()

	for _, tc := range []struct {
		method, path string
		code         int
		ctype, body  string
	}{
		{"GET", "/ui/", 200, "text/html", `<script src="app.js"`},
		{"GET", "/ui/app.js", 200, "javascript", "'use strict'"},
		{"GET", "/ui/style.css", 200, "text/css", ":root"},
		{"GET", "/ui/api/samples", 200, "application/json", `"interval_ms":10`},
		{"GET", "/ui/api/nope", 404, "", "no such route"},
		{"GET", "/ui/nope.js", 404, "", ""},
		{"POST", "/ui/api/samples", 405, "", ""},
	} {
		req, _ := http.NewRequest(tc.method, srv.URL+tc.path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.code || !strings.Contains(resp.Header.Get("Content-Type"), tc.ctype) || !strings.Contains(string(body), tc.body) {
			t.Errorf("%s %s = %d %q %.80q; want %d %q containing %q", tc.method, tc.path, resp.StatusCode,
				resp.Header.Get("Content-Type"), body, tc.code, tc.ctype, tc.body)
		}
		if tc.code == 200 && !strings.Contains(resp.Header.Get("Content-Security-Policy"), "default-src 'self'") {
			t.Errorf("%s: no content security policy", tc.path)
		}
	}

	// The sampler runs by itself: samples arrive, with the job's rate.
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get(srv.URL + "/ui/api/samples")
		if err != nil {
			t.Fatal(err)
		}
		var got Samples
		err = json.NewDecoder(resp.Body).Decode(&got)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Samples) >= 2 && strings.Join(got.Jobs, ",") == "j" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("samples after 10 s: %+v", got)
		}
		time.Sleep(20 * time.Millisecond)
	}
	c.Close()
	n := len(c.Samples().Samples)
	time.Sleep(50 * time.Millisecond)
	if m := len(c.Samples().Samples); m != n {
		t.Errorf("sampling went on after Close: %d samples, then %d", n, m)
	}
}
