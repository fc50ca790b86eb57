//go:build !linux

package bench

import "time"

// sleepUntil sleeps until t (see sleep_linux.go; elsewhere time.Sleep's
// precision).
func sleepUntil(t time.Time) { time.Sleep(time.Until(t)) }
