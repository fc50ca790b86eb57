package file

import (
	"errors"
	"os"
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
	f   *os.File // the inotify instance, non-blocking, in Go's poller (deadlines work)
	buf []byte
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
func (w *inotifyWaker) wait(d time.Duration) {
	if err := w.f.SetReadDeadline(time.Now().Add(d)); err != nil {
		time.Sleep(d)
		return
	}
	if _, err := w.f.Read(w.buf); err != nil && !errors.Is(err, os.ErrDeadlineExceeded) && !errors.Is(err, os.ErrClosed) {
		time.Sleep(d) // not expected; poll
	}
}

func (w *inotifyWaker) Close() error { return w.f.Close() }
