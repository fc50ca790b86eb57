package jsonl

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/joinery/joinery/formats/changelog"
	"github.com/joinery/joinery/internal/linefile"
	"github.com/joinery/joinery/record"
	"github.com/joinery/joinery/sinks"
)

// ErrClosed is returned by Write after Close.
var ErrClosed = errors.New("jsonl: sink closed")

// Sink writes outputs as JSON lines. It is safe for concurrent use, though
// the sinks.Sink contract has one writer at a time.
type Sink struct {
	format changelog.Format
	closer io.Closer // the file Create opened; nil for New
	cut    int64     // bytes of a partial last line Create cut off

	mu struct {
		sync.Mutex
		w      *bufio.Writer
		buf    []byte // a batch's lines, reused from one Write to the next
		closed bool
	}
}

// keepBuf is the largest lines buffer a Sink keeps between Writes.
const keepBuf = 4 << 20

var _ sinks.Sink = (*Sink)(nil)

// New returns a sink writing to w (for example os.Stdout) in format f. Close
// flushes but does not close w.
func New(w io.Writer, f changelog.Format) *Sink {
	s := &Sink{format: f}
	s.mu.w = bufio.NewWriterSize(w, 64<<10)
	return s
}

// Create opens path for appending, creating it (mode 0644) if needed, and
// returns a sink writing to it in format f. Close closes the file. A partial
// last line (a writer killed mid-write left it; its lines are written again)
// is cut off first: Cut says how many bytes.
func Create(path string, f changelog.Format) (*Sink, error) {
	file, cut, err := linefile.OpenAppend(path)
	if err != nil {
		return nil, fmt.Errorf("jsonl: %w", err)
	}
	s := New(file, f)
	s.closer, s.cut = file, cut
	return s, nil
}

// Cut is the number of bytes of a partial last line Create cut off the file
// (0 for New).
func (s *Sink) Cut() int64 { return s.cut }

// Write encodes each output as one line (outputs the format skips, such as -U
// in Upsert, write nothing) and flushes to the underlying writer before it
// returns. For a file that means the lines are in the OS page cache: Write
// does not fsync, so lines can be lost if the machine (not the process)
// crashes. An output that cannot be encoded fails the whole batch before
// anything of it is written. ctx is checked once, before writing.
func (s *Sink) Write(ctx context.Context, batch []record.Output) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	// The batch's lines in one buffer, the sink's own (it is written
	// before Write returns: nothing else holds it), written only once all
	// of them are encoded.
	buf := s.mu.buf[:0]
	if need := 256 * len(batch); cap(buf) < need {
		buf = make([]byte, 0, need)
	}
	defer func() {
		if cap(buf) <= keepBuf {
			s.mu.buf = buf[:0]
		}
	}()
	for _, o := range batch {
		b, ok, err := s.format.Append(buf, o)
		if err != nil {
			return fmt.Errorf("jsonl: %w", err)
		}
		if ok {
			buf = append(b, '\n')
		}
	}
	if s.mu.closed {
		return ErrClosed
	}
	s.mu.w.Write(buf)
	if err := s.mu.w.Flush(); err != nil {
		return fmt.Errorf("jsonl: %w", err)
	}
	return nil
}

// Close flushes buffered lines and closes the file opened by Create. It is
// idempotent; later calls return nil.
func (s *Sink) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.closed {
		return nil
	}
	s.mu.closed = true
	err := s.mu.w.Flush()
	if s.closer != nil {
		err = errors.Join(err, s.closer.Close())
	}
	if err != nil {
		return fmt.Errorf("jsonl: close: %w", err)
	}
	return nil
}
