package bench

import (
	"syscall"
	"time"
)

// sleepUntil sleeps until t, to within the kernel's timer slack (≈ 50 µs),
// where time.Sleep wakes up to a millisecond late: an idle Go runtime waits
// for its timers in epoll_wait, whose timeout is whole milliseconds, so a
// sleep of less than one lasts one. A latency run's feeder released its
// events in bursts up to 1 ms late, and the lateness counted as the
// system's latency. The nanosleep blocks this goroutine's thread in the
// kernel (the runtime hands its P to other goroutines meanwhile).
func sleepUntil(t time.Time) {
	for d := time.Until(t); d > 0; d = time.Until(t) {
		ts := syscall.NsecToTimespec(int64(d))
		if err := syscall.Nanosleep(&ts, nil); err != nil && err != syscall.EINTR {
			time.Sleep(time.Until(t))
			return
		}
	}
}
