package bench

import (
	"bytes"
	"cmp"
	"math"
	"slices"
	"strconv"
	"sync"
	"time"
)

// LoadShare is the share of the maximum sustainable rate the open-loop
// latency runs offer (latency is measured at half the maximum sustainable
// rate).
const LoadShare = 0.5

// Latency is the event-to-output latency of one open-loop run: events are
// released on a fixed schedule, event i at start + i/Rate, whether or not
// the system kept up (so a stall delays every later event's output and
// shows in the percentiles: no coordinated omission), and an output's
// latency is the time it was produced minus its event's release time. For
// window and q9 outputs the event is the one whose arrival moved the
// watermark past the window end (the auction's expiry), so their latency is
// counted from the moment the watermark passed it. Outputs of the
// end-of-input flush have no such event and are not counted. Each output
// counts once, so an event with many outputs weighs more.
type Latency struct {
	Measures string `json:"measures"`
	// MaxRate is the closed-loop rate measured first in the same process
	// (the median of the throughput rounds' events per wall-second); Rate
	// = LoadShare × MaxRate is offered; Achieved is what went through.
	MaxRate  float64 `json:"max_rate_ev_per_sec"`
	Rate     float64 `json:"offered_rate_ev_per_sec"`
	Achieved float64 `json:"achieved_rate_ev_per_sec"`
	Outputs  int64   `json:"outputs_measured"`
	P50Ms    float64 `json:"p50_ms"`
	P99Ms    float64 `json:"p99_ms"`
	MaxMs    float64 `json:"max_ms"`
	// GCCycles is the collections the process completed during the run,
	// GCShare the collector's share of its busy CPU there (the runtime's
	// estimates, /cpu/classes).
	GCCycles int64   `json:"gc_cycles"`
	GCShare  float64 `json:"gc_share"`
	// Invalid is set when the run's output disagreed with the baseline's.
	Invalid string `json:"invalid,omitempty"`
}

// latencies collects samples: a latency and how many outputs had it.
type latencies struct{ s []latSample }

type latSample struct {
	d time.Duration
	n int64
}

func (l *latencies) add(d time.Duration, n int) {
	l.s = append(l.s, latSample{d, int64(n)})
}

// summary fills the percentiles (weighted by outputs) into lat.
func (l *latencies) summary(lat *Latency) {
	slices.SortFunc(l.s, func(a, b latSample) int { return cmp.Compare(a.d, b.d) })
	var total int64
	for _, x := range l.s {
		total += x.n
	}
	lat.Outputs = total
	if total == 0 {
		return
	}
	pct := func(p float64) float64 {
		want := int64(math.Ceil(p * float64(total)))
		var c int64
		for _, x := range l.s {
			if c += x.n; c >= want {
				return ms(x.d)
			}
		}
		return ms(l.s[len(l.s)-1].d)
	}
	lat.P50Ms, lat.P99Ms, lat.MaxMs = pct(0.5), pct(0.99), ms(l.s[len(l.s)-1].d)
}

func ms(d time.Duration) float64 { return math.Round(float64(d)/1e3) / 1e3 }

// OpenLoop drives s through lines at rate events per second, one goroutine
// standing for both the source (the schedule) and the engine: when ahead of
// the schedule it sleeps until the next release, when behind it processes
// the backlog back to back. It returns the latency figures (MaxRate left to
// the caller) and the run's result.
func OpenLoop(s Stepper, lines [][]byte, rate float64) (Latency, RunResult) {
	var l latencies
	gap := float64(time.Second) / rate
	t0 := time.Now()
	for i, line := range lines {
		due := t0.Add(time.Duration(float64(i) * gap))
		sleepUntil(due)
		if n := s.Step(i, line); n > 0 {
			l.add(time.Since(due), n)
		}
	}
	wall := time.Since(t0)
	res := s.Finish()
	lat := Latency{Rate: rate, Achieved: float64(len(lines)) / wall.Seconds()}
	l.summary(&lat)
	return lat, res
}

// stampWriter is the node's stdout in a latency run: it keeps what the sink
// writes with the time of each write, parsed after the run. The bytes go
// into blocks of stampBlock bytes, never moved once written: a buffer grown
// by append would copy everything written so far at each doubling (tens of
// MB near the end of a run), inside the sink's write and in a burst of
// allocation that brings the next GC cycle closer, both charged to the
// outputs being measured.
type stampWriter struct {
	mu     sync.Mutex
	base   time.Time // the first write's time; chunks keep theirs as an offset (no pointer for the GC to scan)
	blocks [][]byte
	size   int // bytes written
	chunks []stampedChunk
}

// stampBlock is the size of a stampWriter block (a longer write gets a
// block of its own size).
const stampBlock = 1 << 20

type stampedChunk struct {
	at  time.Duration // since base
	end int           // offset in the output after the chunk
}

func (w *stampWriter) Write(p []byte) (int, error) {
	now := time.Now()
	w.mu.Lock()
	if w.base.IsZero() {
		w.base = now
	}
	if n := len(w.blocks); n == 0 || cap(w.blocks[n-1])-len(w.blocks[n-1]) < len(p) {
		w.blocks = append(w.blocks, make([]byte, 0, max(stampBlock, len(p))))
	}
	last := &w.blocks[len(w.blocks)-1]
	*last = append(*last, p...)
	w.size += len(p)
	w.chunks = append(w.chunks, stampedChunk{at: now.Sub(w.base), end: w.size})
	w.mu.Unlock()
	return len(p), nil
}

var idTag = []byte(`"id":"`)

// lines calls f for every complete changelog line written, with the time
// its last byte was written and the 1-based source offset its id names
// (0 when it names none).
func (w *stampWriter) lines(f func(line []byte, at time.Time, offset int64)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	buf := make([]byte, 0, w.size)
	for _, b := range w.blocks {
		buf = append(buf, b...)
	}
	start, c := 0, 0
	for start < len(buf) {
		nl := bytes.IndexByte(buf[start:], '\n')
		if nl < 0 {
			return
		}
		end := start + nl + 1
		for c < len(w.chunks)-1 && w.chunks[c].end < end {
			c++
		}
		line := buf[start : end-1]
		f(line, w.base.Add(w.chunks[c].at), outputOffset(line))
		start = end
	}
}

// outputOffset parses the source offset out of a changelog output's id
// (record.OutputID: "source/partition@offset/key/seq/n").
func outputOffset(line []byte) int64 {
	i := bytes.Index(line, idTag)
	if i < 0 {
		return 0
	}
	rest := line[i+len(idTag):]
	at := bytes.IndexByte(rest, '@')
	if at < 0 {
		return 0
	}
	rest = rest[at+1:]
	j := 0
	for j < len(rest) && rest[j] >= '0' && rest[j] <= '9' {
		j++
	}
	off, _ := strconv.ParseInt(string(rest[:j]), 10, 64)
	return off
}
