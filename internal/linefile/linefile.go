// Package linefile opens a file of lines (JSON lines: the file sink's
// changelog, the dead-letter file) for appending, after cutting a partial
// last line off it.
//
// A writer killed in the middle of a write (kill -9, an OOM kill) can leave
// its file ending in part of a line: a write of a batch's lines is not atomic
// for the kernel, which stops a write that a fatal signal interrupts. That
// write never returned, so the offsets of what it held were not committed and
// the lines are written again when the input is read again; the partial line
// is garbage, and a writer that continued the file would glue its first line
// onto it. OpenAppend cuts it off first.
//
// It owns only opening; it does not write, buffer or sync. A reader of a file
// whose writer died for good (it is not continued) skips a last line without
// its newline the same way (Complete).
package linefile

import (
	"bytes"
	"fmt"
	"io"
	"os"
)

// OpenAppend opens path for appending, creating it (mode 0644) if needed. A
// regular file that does not end in a newline is truncated after its last
// one (to empty when it has none); cut is the number of bytes cut off.
func OpenAppend(path string) (f *os.File, cut int64, err error) {
	f, err = os.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, 0, err
	}
	if cut, err = cutPartial(f); err != nil {
		f.Close()
		return nil, 0, fmt.Errorf("%s: cutting a partial last line: %w", path, err)
	}
	return f, cut, nil
}

// cutPartial truncates f after its last newline when it does not end in one.
func cutPartial(f *os.File) (int64, error) {
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	size := fi.Size()
	if !fi.Mode().IsRegular() || size == 0 {
		return 0, nil
	}
	buf := make([]byte, min(size, 64<<10))
	keep := int64(0)
	for end := size; end > 0; {
		n := min(int64(len(buf)), end)
		off := end - n
		if _, err := f.ReadAt(buf[:n], off); err != nil && err != io.EOF {
			return 0, err
		}
		if i := bytes.LastIndexByte(buf[:n], '\n'); i >= 0 {
			keep = off + int64(i) + 1
			break
		}
		end = off
	}
	if keep == size {
		return 0, nil
	}
	if err := f.Truncate(keep); err != nil {
		return 0, err
	}
	return size - keep, nil
}

// Complete returns b without a partial last line (bytes after its last
// newline), and how many bytes that dropped: what a reader of a file whose
// writer was killed, and never continued it, may read as lines.
func Complete(b []byte) ([]byte, int) {
	i := bytes.LastIndexByte(b, '\n')
	return b[:i+1], len(b) - (i + 1)
}
