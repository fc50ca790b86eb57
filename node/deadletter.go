package node

import (
	"bufio"
	"encoding/json"
	"os"
	"sync"

	"github.com/joinery/joinery/job"
	"github.com/joinery/joinery/record"
	"github.com/joinery/joinery/sources"
)

// deadLetter appends rejected records, with their reason and position, to a
// JSON-lines file. A nil *deadLetter drops nothing: records are still logged
// and counted by the caller.
type deadLetter struct {
	mu sync.Mutex
	f  *os.File
	w  *bufio.Writer
}

// DeadLetterRecord is one line of the dead-letter file.
type DeadLetterRecord struct {
	Reason   string          `json:"reason"`
	Error    string          `json:"error"`
	Position record.Position `json:"position"`
	Raw      string          `json:"raw"`
}

func openDeadLetter(spec *job.Spec) (*deadLetter, error) {
	if spec.DeadLetter == "" {
		return nil, nil
	}
	f, err := os.OpenFile(spec.Resolve(spec.DeadLetter), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	return &deadLetter{f: f, w: bufio.NewWriter(f)}, nil
}

func (d *deadLetter) add(m sources.Message, reason string, err error) {
	if d == nil {
		return
	}
	b, _ := json.Marshal(DeadLetterRecord{Reason: reason, Error: err.Error(), Position: m.Pos, Raw: string(m.Value)})
	d.mu.Lock()
	d.w.Write(append(b, '\n'))
	d.mu.Unlock()
}

func (d *deadLetter) flush() error {
	if d == nil {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.w.Flush(); err != nil {
		return err
	}
	return d.f.Sync()
}

func (d *deadLetter) close() {
	if d == nil {
		return
	}
	_ = d.flush()
	_ = d.f.Close()
}
