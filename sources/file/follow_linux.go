package file

import (
	"errors"
	"os"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// inotifyWaker wakes a following source when its file is written
// (IN_MODIFY), so an appended line is read at once instead of at the next
// poll; the poll stays as the fallback (a missed event, a file system
// without inotify). The watch is made when the source opens the file, so
// a write between the source's last read and its wait leaves an event
// pending and the wait returns at once.
type inotifyWaker struct {
	f      *os.File // the inotify instance, non-blocking, in Go's poller (deadlines work)
	buf    []byte
	closed atomic.Bool
}

// newWaker watches path for writes; nil (poll only) when inotify is not
// available.
func newWaker(path string) waker {
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return nil
	}
	if _, err := unix.InotifyAddWatch(fd, path, unix.IN_MODIFY|unix.IN_ATTRIB|unix.IN_CLOSE_WRITE); err != nil {
		unix.Close(fd)
		return nil
	}
	return &inotifyWaker{f: os.NewFile(uintptr(fd), "inotify"), buf: make([]byte, 4096)}
}

// wait returns once the file was written since the last wait (consuming
// the events), or after d, or at once when the waker is closed.
//
// A closed waker returns at once whenever its wait starts: Close may come
// between the reader's check for a stop and its wait, and the deadline
// can then no longer be set (a sleep of d there made Close, which waits
// for the reader, wait out a whole poll: with the test's hour-long poll,
// forever).
func (w *inotifyWaker) wait(d time.Duration) {
	err := w.f.SetReadDeadline(time.Now().Add(d))
	if err == nil {
		_, err = w.f.Read(w.buf)
	}
	// A closed file's SetReadDeadline says "use of closed file", which is
	// not os.ErrClosed: the flag, set before the file is closed, decides.
	if err != nil && !w.closed.Load() && !errors.Is(err, os.ErrDeadlineExceeded) && !errors.Is(err, os.ErrClosed) {
		time.Sleep(d) // not expected; poll
	}
}

func (w *inotifyWaker) Close() error {
	w.closed.Store(true)
	return w.f.Close()
}
