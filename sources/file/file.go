package file

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/joinery/joinery/record"
	"github.com/joinery/joinery/sources"
)

// DefaultMaxLineBytes is the line length limit used when
// Config.MaxLineBytes is 0.
const DefaultMaxLineBytes = 1 << 20

// followPoll is how often a following source looks for appended data at the
// end of the file when nothing wakes it earlier: on Linux a write to the
// file wakes it at once (inotify, follow_linux.go), so an appended line
// does not wait for the poll; stdin and a caller's Reader block in their
// reads, or are polled.
var followPoll = 100 * time.Millisecond

// waker wakes a following source once its file is written (see
// inotifyWaker).
type waker interface {
	// wait returns once the file was written since the last wait, after
	// d at the latest, and at once after Close.
	wait(d time.Duration)
	Close() error
}

// ErrClosed is returned by Read after Close.
var ErrClosed = errors.New("file: source closed")

// Config configures a file source. The zero value of an optional field means
// its default.
type Config struct {
	// Name is the source name, written to Position.Source. Required.
	Name string
	// Path is the file to read; "-" reads os.Stdin. Ignored when Reader is
	// set; otherwise required.
	Path string
	// Reader, when set, is read instead of Path (for tests and embedding). The
	// source never closes it.
	Reader io.Reader
	// StartAfter skips lines with offset <= StartAfter, to resume after a
	// committed offset. Default 0: read from the first line.
	StartAfter int64
	// Follow keeps reading lines appended after the end of the input, like
	// tail -f, instead of returning io.EOF. A partial last line (no newline
	// yet) is held back until its newline arrives. Truncation and rotation
	// are not detected.
	Follow bool
	// MaxLineBytes limits the bytes of one line (without the newline). A
	// longer line is returned cut to its first MaxLineBytes bytes (so the
	// Debezium decoder rejects it as not-json) and the rest of it is skipped;
	// it still takes one offset. Default DefaultMaxLineBytes.
	MaxLineBytes int
}

// Validate reports every problem with c at once.
func (c Config) Validate() error {
	var errs []error
	if c.Name == "" {
		errs = append(errs, errors.New("file: Name is required"))
	}
	if c.Path == "" && c.Reader == nil {
		errs = append(errs, errors.New("file: Path is required"))
	}
	if c.StartAfter < 0 {
		errs = append(errs, fmt.Errorf("file: StartAfter %d is negative", c.StartAfter))
	}
	if c.MaxLineBytes < 0 {
		errs = append(errs, fmt.Errorf("file: MaxLineBytes %d is negative", c.MaxLineBytes))
	}
	return errors.Join(errs...)
}

// item is what the reader goroutine hands Read: a message, or the error that
// ended reading (io.EOF at the end of the input).
type item struct {
	msg sources.Message
	err error
}

// Source reads JSON lines. Read and Commit may be called from different
// goroutines; Read is not called concurrently with itself.
//
// A goroutine owned by the source reads ahead (at most a bounded number of
// lines) so that Read can return on ctx cancellation even while the input
// blocks (stdin, a pipe). Close stops it; if it is blocked reading stdin or a
// caller's Reader, it exits at its next read.
type Source struct {
	cfg    Config
	items  chan item
	stop   chan struct{}
	done   chan struct{}
	closer io.Closer // the file New opened; nil for stdin and Reader
	waker  waker     // Follow of a file, on Linux: wakes the reader when the file is written; nil: poll
	once   sync.Once

	err error // terminal error seen by Read; only Read touches it

	mu        sync.Mutex
	committed int64
}

var _ sources.Source = (*Source)(nil)

// New opens the input and starts reading ahead. It does not write into cfg.
func New(cfg Config) (*Source, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.MaxLineBytes == 0 {
		cfg.MaxLineBytes = DefaultMaxLineBytes
	}
	s := &Source{
		cfg:       cfg,
		items:     make(chan item, 256),
		stop:      make(chan struct{}),
		done:      make(chan struct{}),
		committed: cfg.StartAfter,
	}
	r := cfg.Reader
	switch {
	case r != nil:
	case cfg.Path == "-":
		r = os.Stdin
	default:
		f, err := os.Open(cfg.Path)
		if err != nil {
			return nil, fmt.Errorf("file: %w", err)
		}
		r, s.closer = f, f
		if cfg.Follow {
			s.waker = newWaker(cfg.Path) // before the first read: no write is missed
		}
	}
	go s.run(r)
	return s, nil
}

// run reads lines and sends them to s.items until the input ends, an error
// occurs or Close is called.
func (s *Source) run(r io.Reader) {
	defer close(s.done)
	br := bufio.NewReaderSize(r, 64<<10)
	var (
		line   []byte // the current line so far, at most MaxLineBytes
		cut    bool   // the current line was longer than MaxLineBytes
		offset int64
	)
	send := func(it item) bool {
		select { // room in the queue: a send that locks it alone, not s.stop too
		case s.items <- it:
			return true
		default:
		}
		select {
		case s.items <- it:
			return true
		case <-s.stop:
			return false
		}
	}
	for {
		chunk, err := br.ReadSlice('\n')
		if room := s.cfg.MaxLineBytes - len(line); len(chunk) > 0 {
			data := bytes.TrimSuffix(chunk, []byte("\n"))
			if len(data) > room {
				data, cut = data[:room], true
			}
			line = append(line, data...)
		}
		switch {
		case err == nil || (err == io.EOF && !s.cfg.Follow && (len(line) > 0 || cut)):
			// A complete line, or the unterminated last line of a finite input.
			offset++
			if offset > s.cfg.StartAfter {
				if !cut {
					line = bytes.TrimSuffix(line, []byte("\r"))
				}
				v := make([]byte, len(line))
				copy(v, line)
				pos := record.Position{Source: s.cfg.Name, Partition: 0, Offset: offset}
				if !send(item{msg: sources.Message{Pos: pos, Value: v}}) {
					return
				}
			}
			line, cut = line[:0], false
			if err == nil {
				continue
			}
			send(item{err: io.EOF})
			return
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err == io.EOF && s.cfg.Follow && s.waker != nil:
			s.waker.wait(followPoll)
			select {
			case <-s.stop:
				return
			default:
			}
		case err == io.EOF && s.cfg.Follow:
			t := time.NewTimer(followPoll)
			select {
			case <-t.C:
			case <-s.stop:
				t.Stop()
				return
			}
		case err == io.EOF:
			send(item{err: io.EOF})
			return
		default:
			send(item{err: fmt.Errorf("file: read %s: %w", s.cfg.Name, err)})
			return
		}
	}
}

// Read blocks until at least one line is available and returns up to max
// lines in order; the caller owns their Values. At the end of a finite input
// it returns io.EOF (after the last line, on a call of its own). It returns
// ctx.Err() when ctx ends, ErrClosed after Close, and a read error, once
// seen, on every later call.
func (s *Source) Read(ctx context.Context, max int) ([]sources.Message, error) {
	if s.err != nil {
		return nil, s.err
	}
	if max <= 0 {
		max = 1
	}
	var out []sources.Message
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-s.stop:
		return nil, ErrClosed
	case it := <-s.items:
		if it.err != nil {
			s.err = it.err
			return nil, it.err
		}
		// Room for what is queued already (up to max), not grown line by line.
		out = make([]sources.Message, 1, min(max, 1+len(s.items)))
		out[0] = it.msg
	}
	for len(out) < max {
		select {
		case it := <-s.items:
			if it.err != nil {
				s.err = it.err
				return out, nil
			}
			out = append(out, it.msg)
		default:
			return out, nil
		}
	}
	return out, nil
}

// Commit records the highest offset among the positions of this source
// (Position.Source == Config.Name); positions of other sources are ignored.
// It fails for a partition other than 0. Nothing is written anywhere: see
// Committed.
func (s *Source) Commit(_ context.Context, upTo []record.Position) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range upTo {
		if p.Source != s.cfg.Name {
			continue
		}
		if p.Partition != 0 {
			return fmt.Errorf("file: commit %v: source %s has only partition 0", p, s.cfg.Name)
		}
		if p.Offset > s.committed {
			s.committed = p.Offset
		}
	}
	return nil
}

// Committed returns the highest committed offset: Config.StartAfter until a
// higher offset is committed. It is safe to call concurrently.
func (s *Source) Committed() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.committed
}

// Close stops reading and closes the file New opened (never stdin or
// Config.Reader). It waits for the reader goroutine unless the input is
// stdin or a caller's Reader, which may block it beyond our control. It is
// idempotent.
func (s *Source) Close() error {
	var err error
	s.once.Do(func() {
		close(s.stop)
		if s.waker != nil {
			_ = s.waker.Close() // ends a wait at once
		}
		if s.closer != nil {
			err = s.closer.Close()
			<-s.done
		}
	})
	if err != nil {
		return fmt.Errorf("file: close: %w", err)
	}
	return nil
}
