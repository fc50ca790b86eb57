package embedded

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
)

// logMagic starts every log file; its last byte is the format version.
const logMagic = "JNRYLOG\x01"

const (
	frameHeader = 8 // length + crc
	// maxRecord bounds one record's payload; a length beyond it is garbage.
	maxRecord = 1 << 30
	// compactChunk is the approximate payload size of one save record
	// written by compaction.
	compactChunk = 4 << 20
	// compactMin is the log size below which New never compacts.
	compactMin = 8 << 20
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// errCorrupt marks a log that is damaged other than by a torn tail.
var errCorrupt = errors.New("corrupt log")

// replay decodes the records of a log image (header included) and calls
// apply for each, in order. It returns the length of the valid prefix: a
// torn last record is not an error, its bytes are simply not counted. A
// damaged record followed by more data is errCorrupt.
func replay(b []byte, apply func(logRecord)) (valid int64, err error) {
	if len(b) < len(logMagic) {
		if string(b) != logMagic[:len(b)] {
			return 0, fmt.Errorf("%w: not a joinery log (header %q)", errCorrupt, b)
		}
		return 0, nil // torn header: an empty log
	}
	if string(b[:len(logMagic)]) != logMagic {
		if string(b[:len(logMagic)-1]) == logMagic[:len(logMagic)-1] {
			return 0, fmt.Errorf("%w: unsupported log version %d", errCorrupt, b[len(logMagic)-1])
		}
		return 0, fmt.Errorf("%w: not a joinery log (header %q)", errCorrupt, b[:len(logMagic)])
	}
	off := len(logMagic)
	for off < len(b) {
		rest := b[off:]
		if len(rest) < frameHeader {
			return int64(off), nil // torn frame header
		}
		n := binary.LittleEndian.Uint32(rest)
		sum := binary.LittleEndian.Uint32(rest[4:])
		if n > maxRecord || int64(n) > int64(len(rest)-frameHeader) {
			return int64(off), nil // torn payload (or a garbage length at the tail)
		}
		end := frameHeader + int(n)
		payload := rest[frameHeader:end]
		last := end == len(rest)
		if crc32.Checksum(payload, crcTable) != sum {
			if last {
				return int64(off), nil // torn: the tail was not fully written
			}
			return int64(off), fmt.Errorf("%w: checksum mismatch in record at byte %d", errCorrupt, off)
		}
		r, err := decodePayload(payload)
		if err != nil {
			// The checksum matched, so this is not a torn write.
			return int64(off), fmt.Errorf("%w: record at byte %d: %v", errCorrupt, off, err)
		}
		apply(r)
		off += end
	}
	return int64(off), nil
}

// logFile is the open, append-only log. It is not safe for concurrent use;
// Store serializes access with its wmu.
type logFile struct {
	path   string
	f      *os.File
	size   int64 // bytes of valid log; the file is exactly this long
	failed error // sticky: set after a failed write or fsync
	buf    []byte
}

// openLog opens or creates the log at path, replays it through apply, and
// cuts a torn tail off so that appends follow the last valid record.
func openLog(path string, apply func(logRecord)) (*logFile, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	l := &logFile{path: path, f: f}
	if err := l.load(apply); err != nil {
		_ = f.Close()
		return nil, err
	}
	return l, nil
}

func (l *logFile) load(apply func(logRecord)) error {
	b, err := io.ReadAll(l.f)
	if err != nil {
		return err
	}
	valid, err := replay(b, apply)
	if err != nil {
		return err
	}
	if valid == 0 {
		// New (or torn while being created): write the header.
		if err := l.f.Truncate(0); err != nil {
			return err
		}
		if _, err := l.f.WriteAt([]byte(logMagic), 0); err != nil {
			return err
		}
		if err := l.f.Sync(); err != nil {
			return err
		}
		if err := syncDir(filepath.Dir(l.path)); err != nil {
			return err
		}
		valid = int64(len(logMagic))
	} else if valid < int64(len(b)) {
		if err := l.f.Truncate(valid); err != nil {
			return err
		}
		if err := l.f.Sync(); err != nil {
			return err
		}
	}
	l.size = valid
	_, err = l.f.Seek(valid, io.SeekStart)
	return err
}

// append writes r and fsyncs. On failure the log refuses further appends:
// after a failed fsync the file's contents are unknown.
func (l *logFile) append(r logRecord) error {
	if l.failed != nil {
		return fmt.Errorf("log unusable after an earlier error: %w", l.failed)
	}
	b, err := encodeRecord(l.buf[:0], r)
	if err != nil {
		return err
	}
	if cap(b) <= 1<<20 {
		l.buf = b
	}
	if _, err := l.f.Write(b); err != nil {
		l.failed = err
		// Best effort: cut the partial record so a reopen sees a clean tail.
		_ = l.f.Truncate(l.size)
		return err
	}
	if err := l.f.Sync(); err != nil {
		l.failed = err
		return err
	}
	l.size += int64(len(b))
	return nil
}

// shouldCompact reports whether the log is big enough, compared with the
// live data (live bytes), to be worth rewriting.
func (l *logFile) shouldCompact(live int64) bool {
	return l.size > compactMin && l.size > 2*live
}

// compact replaces the log with one holding only recs: it writes a
// temporary file, fsyncs it, renames it over the log and fsyncs the
// directory, so a crash at any point leaves either the old or the new log.
func (l *logFile) compact(recs []logRecord) error {
	tmp := l.path + ".compact"
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	fail := func(err error) error {
		_ = f.Close()
		_ = os.Remove(tmp)
		return err
	}
	b := []byte(logMagic)
	for _, r := range recs {
		if b, err = encodeRecord(b, r); err != nil {
			return fail(err)
		}
		if len(b) >= compactChunk {
			if _, err := f.Write(b); err != nil {
				return fail(err)
			}
			b = b[:0]
		}
	}
	if _, err := f.Write(b); err != nil {
		return fail(err)
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	size, err := f.Seek(0, io.SeekCurrent)
	if err != nil {
		return fail(err)
	}
	if err := os.Rename(tmp, l.path); err != nil {
		return fail(err)
	}
	if err := syncDir(filepath.Dir(l.path)); err != nil {
		_ = f.Close()
		return err
	}
	_ = l.f.Close()
	l.f, l.size = f, size
	return nil
}

func (l *logFile) close() error {
	return l.f.Close()
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
