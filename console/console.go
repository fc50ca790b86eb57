package console

import (
	"embed"
	"encoding/json"
	"io/fs"
	"net/http"
	"runtime"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

//go:embed static
var static embed.FS

// Prefix is the path the console is served under. A Console expects the
// full request path (it is mounted on the admin mux without StripPrefix).
const Prefix = "/ui/"

// APIPrefix is where the console's data is served (api/samples). The page
// itself, under Prefix, holds no data; a server with tokens guards
// APIPrefix with the read scope and leaves the page open, so that the page
// can load and ask for the token.
const APIPrefix = Prefix + "api/"

// Defaults of Options.
const (
	DefaultInterval = time.Second
	DefaultKeep     = 300 // five minutes at DefaultInterval
)

// Options tunes New. A zero field means its default.
type Options struct {
	// Interval is the time between two samples (DefaultInterval).
	Interval time.Duration
	// Keep is how many samples the ring holds (DefaultKeep).
	Keep int
}

// Console serves the page under Prefix and its samples. It is an
// http.Handler safe for concurrent use.
//
// New starts one goroutine that samples the registry every Interval. It
// stops on Close, or by itself once the Console is no longer referenced
// (garbage collected), so a server that drops its handler leaks nothing.
type Console struct {
	files http.Handler
	s     *sampler
}

// New returns a console sampling g (a node's admin.Metrics registry).
func New(g prometheus.Gatherer, opts Options) *Console {
	if opts.Interval <= 0 {
		opts.Interval = DefaultInterval
	}
	if opts.Keep <= 0 {
		opts.Keep = DefaultKeep
	}
	sub, err := fs.Sub(static, "static")
	if err != nil {
		panic("console: embedded assets: " + err.Error()) // the embed pattern names the directory
	}
	c := &Console{
		files: http.StripPrefix(Prefix, http.FileServerFS(sub)),
		s:     newSampler(g, opts.Interval, opts.Keep),
	}
	c.s.sample(time.Now()) // the baseline, before New returns and the node counts anything
	go c.s.run()
	// The goroutine holds only the sampler, never c, so c can be collected;
	// then the sampler stops.
	runtime.AddCleanup(c, func(s *sampler) { s.close() }, c.s)
	return c
}

// Close stops the sampler and waits for it. The page keeps being served,
// with the samples taken so far. Idempotent.
func (c *Console) Close() {
	c.s.close()
	<-c.s.done
}

// Samples returns what GET /ui/api/samples answers.
func (c *Console) Samples() Samples { return c.s.samples() }

// ServeHTTP serves GET and HEAD under Prefix: the page's assets and
// api/samples. Other methods get 405: the console is read-only.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "the console is read-only", http.StatusMethodNotAllowed)
		return
	}
	h := w.Header()
	// The page loads only its own assets and talks only to this server.
	h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-cache")
	switch rest := strings.TrimPrefix(r.URL.Path, Prefix); rest {
	case "api/samples":
		b, err := json.Marshal(c.s.samples())
		if err != nil {
			http.Error(w, "console: encode samples: "+err.Error(), http.StatusInternalServerError)
			return
		}
		h.Set("Content-Type", "application/json")
		_, _ = w.Write(append(b, '\n'))
	default:
		if strings.HasPrefix(rest, "api/") {
			http.Error(w, "console: no such route", http.StatusNotFound)
			return
		}
		c.files.ServeHTTP(w, r)
	}
}
