// Package testutil holds test helpers shared across packages: a real
// redis-server started on a free loopback port, a real Redis Cluster of
// such servers (StartRedisCluster, with slot migration for tests), and
// polling waits. It is imported only from _test.go files, and it fakes
// nothing: a missing redis-server or redis-cli fails the test.
package testutil

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Redis is a redis-server process owned by a test.
type Redis struct {
	Addr string // host:port on 127.0.0.1
	Dir  string // working directory (AOF and RDB files)
	cmd  *exec.Cmd
	args []string
	t    testing.TB
}

// StartRedis starts redis-server on a free loopback port with its data in a
// fresh temporary directory and stops it when the test ends. Extra arguments
// are redis-server options such as "--appendonly", "yes". A missing
// redis-server fails the test (it never skips): install it with
// `apt-get install redis-server` or run `make test`, which does.
func StartRedis(t testing.TB, extra ...string) *Redis {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Fatalf("redis-server not found in PATH: install it (Debian: apt-get install redis-server) or run `make test`, which installs it")
	}
	r := &Redis{Dir: t.TempDir(), t: t}
	r.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(FreePort(t)))
	_, port, _ := net.SplitHostPort(r.Addr)
	r.args = append([]string{"--port", port, "--bind", "127.0.0.1", "--dir", r.Dir,
		"--save", "", "--appendonly", "no", "--protected-mode", "no"}, extra...)
	r.Start()
	t.Cleanup(r.Stop)
	return r
}

// Start (re)starts the server with the same port, directory and options.
func (r *Redis) Start() {
	r.t.Helper()
	cmd := exec.Command("redis-server", r.args...)
	cmd.Stdout = os.Stderr
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		r.t.Fatalf("start redis-server: %v", err)
	}
	r.cmd = cmd
	WaitFor(r.t, 10*time.Second, func() error { return ping(r.Addr) })
}

// Stop terminates the server (SIGTERM) and waits for it. It is idempotent.
func (r *Redis) Stop() {
	if r.cmd == nil || r.cmd.Process == nil {
		return
	}
	_ = r.cmd.Process.Signal(os.Interrupt)
	_ = r.cmd.Wait()
	r.cmd = nil
}

// Kill kills the server with SIGKILL and waits for it.
func (r *Redis) Kill() {
	if r.cmd == nil || r.cmd.Process == nil {
		return
	}
	_ = r.cmd.Process.Kill()
	_ = r.cmd.Wait()
	r.cmd = nil
}

// AOFPath is where the append-only file lives when enabled.
func (r *Redis) AOFPath() string { return filepath.Join(r.Dir, "appendonlydir") }

func ping(addr string) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if !strings.HasPrefix(line, "+PONG") {
		return fmt.Errorf("redis answered %q", line)
	}
	return nil
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// WaitFor polls f until it returns nil or the deadline passes, then fails the
// test with f's last error. It never sleeps longer than 20ms at a time.
func WaitFor(t testing.TB, d time.Duration, f func() error) {
	t.Helper()
	deadline := time.Now().Add(d)
	var err error
	for {
		if err = f(); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %v: %v", d, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Signal sends sig to the running redis-server (SIGSTOP and SIGCONT pause
// and resume it: a replica that stops taking its master's stream).
func (r *Redis) Signal(sig os.Signal) error {
	if r.cmd == nil || r.cmd.Process == nil {
		return fmt.Errorf("testutil: redis on %s is not running", r.Addr)
	}
	return r.cmd.Process.Signal(sig)
}
