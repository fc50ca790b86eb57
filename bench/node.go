package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/joinery/joinery/formats/changelog"
	"github.com/joinery/joinery/job"
	"github.com/joinery/joinery/node"
)

// nodeRun runs the full node in-process on a file of lines: cluster of one,
// actors, the embedded store (redisAddr "") or Redis, a file source, and a
// changelog file sink whose output is checksummed after the measured part.
// measure wraps exactly node.Run and node.Close (the flush of pending state
// writes) for CPU time; the wall time is node.Run's alone (Close spends ~2 s
// idle in the graceful cluster leave). The job file, node start and reading
// the sink back are outside.
func nodeRun(ctx context.Context, w *Workload, dir, inPath, redisAddr string, run int, measure func(f func() error) error) (RunResult, error) {
	name := fmt.Sprintf("bench-%s-%d", strings.ReplaceAll(w.Name, "-", ""), run)
	outPath := filepath.Join(dir, name+".out.jsonl")
	join, tables, _ := strings.Cut(w.NodeJob, "tables:")
	yml := "name: " + name + "\n" + join +
		fmt.Sprintf("sources: [{name: in, type: file, path: %q, tables: %s}]\n", inPath, strings.TrimSpace(tables)) +
		fmt.Sprintf("sinks: [{type: file, path: %q, format: changelog}]\n", outPath) +
		"cluster: {profile: local}\n"
	if redisAddr != "" {
		yml += fmt.Sprintf("state: {store: redis, redis: {addr: %q}}\n", redisAddr)
	}
	spec, err := job.Parse([]byte(yml))
	if err != nil {
		return RunResult{}, fmt.Errorf("job: %w\n%s", err, yml)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	n, err := node.Start(ctx, spec, node.Options{Logger: log, Stdout: io.Discard, Stdin: strings.NewReader("")})
	if err != nil {
		return RunResult{}, fmt.Errorf("node start: %w", err)
	}
	defer n.Close(context.Background())
	var runWall time.Duration
	if err := measure(func() error {
		t0 := time.Now()
		if err := n.Run(ctx); err != nil {
			return err
		}
		runWall = time.Since(t0)
		return n.Close(ctx)
	}); err != nil {
		return RunResult{}, fmt.Errorf("node run: %w", err)
	}
	defer os.Remove(outPath)
	res, err := checksumFile(outPath, w.NodeJob != "")
	if err != nil {
		return res, err
	}
	res.Rejected = int(n.Stats().BadTotal())
	res.Wall = runWall
	return res, nil
}

// checksumFile reads a changelog file sink's output back.
func checksumFile(path string, withPK bool) (RunResult, error) {
	var res RunResult
	f, err := os.Open(path)
	if err != nil {
		return res, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	var h Hasher
	for sc.Scan() {
		o, err := changelog.DecodeChangelog(sc.Bytes())
		if err != nil {
			return res, fmt.Errorf("sink output: %w", err)
		}
		res.Check.Add(o.Kind, h.HashOutput(o, withPK))
	}
	return res, sc.Err()
}

func writeLines(path string, lines [][]byte) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	for _, l := range lines {
		bw.Write(l)
		bw.WriteByte('\n')
	}
	if err := bw.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// redisServer is a redis-server the harness started, RDB snapshots on.
type redisServer struct {
	Addr string
	cmd  *exec.Cmd
}

// startRedis starts redis-server on a free loopback port in dir with RDB
// snapshots on (save 1 1: a background save each second there were
// writes), as internal/testutil does for tests. It returns nil, nil when
// redis-server is not installed.
func startRedis(dir string) (*redisServer, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, nil
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir,
		"--save", "1 1", "--appendonly", "no", "--protected-mode", "no", "--loglevel", "warning")
	cmd.Stdout, cmd.Stderr = io.Discard, os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	r := &redisServer{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), cmd: cmd}
	deadline := time.Now().Add(10 * time.Second)
	for {
		c := goredis.NewClient(&goredis.Options{Addr: r.Addr})
		err := c.Ping(context.Background()).Err()
		c.Close()
		if err == nil {
			return r, nil
		}
		if time.Now().After(deadline) {
			r.Stop()
			return nil, fmt.Errorf("redis-server on %s: %w", r.Addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Flush empties the server between runs.
func (r *redisServer) Flush() error {
	c := goredis.NewClient(&goredis.Options{Addr: r.Addr})
	defer c.Close()
	return c.FlushAll(context.Background()).Err()
}

// CPU is the server's user+system CPU time so far (Linux /proc; 0 elsewhere).
func (r *redisServer) CPU() time.Duration {
	if r == nil {
		return 0
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", r.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * time.Second / 100 // USER_HZ is 100 on Linux
}

// Stop terminates the server and waits for it.
func (r *redisServer) Stop() {
	if r == nil || r.cmd.Process == nil {
		return
	}
	_ = r.cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { _ = r.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = r.cmd.Process.Kill()
		<-done
	}
}

var errInvalid = errors.New("checksum mismatch")
