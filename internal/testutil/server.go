package testutil

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// RedisConfig says how LaunchRedis starts a redis-server.
type RedisConfig struct {
	// Dir is the server's working directory (its RDB, AOF and cluster
	// files); it is made when missing.
	Dir string
	// Args are redis-server options after the defaults (persistence off:
	// `--save "" --appendonly no`); a later option overrides an earlier
	// one, so "--save", "1 1" turns RDB snapshots on.
	Args []string
	// LogName, when set, appends the server's output to Dir/LogName;
	// otherwise it goes to Log (nil: os.Stderr).
	LogName string
	Log     io.Writer
}

// RedisServer is a redis-server process on a free loopback port, for tests
// (StartRedis wraps it with the test's cleanup) and for the benchmark
// drivers, which are not tests. Its methods are not safe for concurrent
// use.
type RedisServer struct {
	Addr string // host:port on 127.0.0.1
	Dir  string // working directory
	args []string
	cfg  RedisConfig
	cmd  *exec.Cmd
	done chan struct{} // closed once cmd has exited
}

// LaunchRedis starts redis-server as cfg says on a free loopback port and
// returns once it answers PING. A missing redis-server is an error saying
// how to install it. The caller stops the server (Stop).
func LaunchRedis(cfg RedisConfig) (*RedisServer, error) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		return nil, fmt.Errorf("redis-server not found in PATH: install it (Debian: apt-get install redis-server) or run `make redis`: %w", err)
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, err
	}
	port, err := PickPort()
	if err != nil {
		return nil, err
	}
	s := &RedisServer{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), Dir: cfg.Dir, cfg: cfg}
	s.args = append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", cfg.Dir,
		"--save", "", "--appendonly", "no", "--protected-mode", "no"}, cfg.Args...)
	if err := s.Start(); err != nil {
		return nil, err
	}
	return s, nil
}

// Start (re)starts the server with the same port, directory and options
// and waits until it answers PING (at most 10 s).
func (s *RedisServer) Start() error {
	cmd := exec.Command("redis-server", s.args...)
	var logFile *os.File
	if s.cfg.LogName != "" {
		f, err := os.OpenFile(filepath.Join(s.Dir, s.cfg.LogName), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return err
		}
		logFile = f
		cmd.Stdout, cmd.Stderr = f, f
	} else {
		out := s.cfg.Log
		if out == nil {
			out = os.Stderr
		}
		cmd.Stdout, cmd.Stderr = out, out
	}
	if err := cmd.Start(); err != nil {
		if logFile != nil {
			logFile.Close()
		}
		return fmt.Errorf("start redis-server: %w", err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		if logFile != nil {
			logFile.Close()
		}
		close(done)
	}()
	s.cmd, s.done = cmd, done
	if err := Poll(context.Background(), 10*time.Second, 20*time.Millisecond, "redis-server "+s.Addr+" answers PING", func() error { return ping(s.Addr) }); err != nil {
		s.Kill()
		return err
	}
	return nil
}

// Stop terminates the server (SIGTERM) and waits for it, at most 10 s
// before it kills it. It is idempotent.
func (s *RedisServer) Stop() {
	if s == nil || s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Signal(os.Interrupt)
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done
	}
	s.cmd = nil
}

// Kill kills the server with SIGKILL and waits for it.
func (s *RedisServer) Kill() {
	if s == nil || s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	<-s.done
	s.cmd = nil
}

// Signal sends sig to the running server (SIGSTOP and SIGCONT pause and
// resume it: a replica that stops taking its master's stream).
func (s *RedisServer) Signal(sig os.Signal) error {
	if s.cmd == nil {
		return fmt.Errorf("testutil: redis on %s is not running", s.Addr)
	}
	return s.cmd.Process.Signal(sig)
}

// Pid is the running server's process id (0 when it is not running).
func (s *RedisServer) Pid() int {
	if s == nil || s.cmd == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

// AOFPath is where the append-only file lives when enabled.
func (s *RedisServer) AOFPath() string { return filepath.Join(s.Dir, "appendonlydir") }

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

// PickPort returns a port on 127.0.0.1 that was free for TCP and UDP a
// moment ago, below the kernel's ephemeral range (Linux's
// net.ipv4.ip_local_port_range) when it can tell where that starts. A port
// in the ephemeral range can be taken as the local port of any outgoing
// connection on the machine, for instance between a node's exit and its
// restart on the same address; a port below it is only ever taken by an
// explicit bind.
func PickPort() (int, error) {
	if lo := ephemeralLow(); lo > minPickPort+1000 {
		// Ports are handed out in turn from a random start, so one process
		// never gets the same port twice and two processes rarely meet.
		pick.Lock()
		defer pick.Unlock()
		if pick.next == 0 {
			pick.next = rand.IntN(lo - minPickPort)
		}
		for range 500 {
			p := minPickPort + pick.next%(lo-minPickPort)
			pick.next++
			if portFree(p) {
				return p, nil
			}
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// pick is PickPort's turn: the offset of the next port above minPickPort.
var pick struct {
	sync.Mutex
	next int
}

// minPickPort is the lowest port PickPort returns: above the ports
// services commonly listen on.
const minPickPort = 10000

// ephemeralLow is the first port of the kernel's ephemeral range, 0 when
// it cannot be read.
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 0
	}
	lo, err := strconv.Atoi(f[0])
	if err != nil {
		return 0
	}
	return lo
}

// portFree reports whether port can be bound on 127.0.0.1 for TCP and UDP
// (memberlist gossips on both).
func portFree(port int) bool {
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return false
	}
	defer l.Close()
	u, err := net.ListenPacket("udp", addr)
	if err != nil {
		return false
	}
	u.Close()
	return true
}

// Poll calls f every interval until it returns nil, d passes (an error
// naming what, wrapping f's last error) or ctx ends.
func Poll(ctx context.Context, d, interval time.Duration, what string, f func() error) error {
	deadline := time.Now().Add(d)
	for {
		err := f()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: not within %v: %w", what, d, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(interval):
		}
	}
}
