package fleetbench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/joinery/joinery/internal/testutil"
)

// CgroupRoot is where the cgroup v1 cpu controller is mounted.
const CgroupRoot = "/sys/fs/cgroup/cpu"

// ErrNoCgroup is returned when the per-node CPU cgroups cannot be made: no
// cgroup v1 cpu controller mounted at CgroupRoot, or no permission to make
// a group under it.
var ErrNoCgroup = errors.New("fleetbench: cannot make cgroup v1 cpu groups")

// Cgroup is one cgroup v1 cpu group with a CFS quota.
type Cgroup struct{ Path string }

// CgroupPeriodUs is the CFS period the groups use by default (the
// kernel's and Kubernetes' default).
const CgroupPeriodUs = 100000

// MakeCgroup makes (or reuses) root/parent/name under the cpu controller
// with a quota of cpus CPUs per CFS period: cpu.cfs_period_us = periodUs
// (CgroupPeriodUs when 0) and cpu.cfs_quota_us = cpus × periodUs. A node
// that spends its quota early in a period waits for the next one: up to
// (1 − cpus) × period of added latency, 70 ms at 0.3 CPU and 100 ms.
func MakeCgroup(root, parent, name string, cpus float64, periodUs int) (*Cgroup, error) {
	if periodUs <= 0 {
		periodUs = CgroupPeriodUs
	}
	if _, err := os.Stat(filepath.Join(root, "cpu.cfs_quota_us")); err != nil {
		return nil, fmt.Errorf("%w: %s has no cpu.cfs_quota_us (is the cgroup v1 cpu controller mounted there?): %w", ErrNoCgroup, root, err)
	}
	quota := int(cpus * float64(periodUs))
	if quota < 1000 {
		return nil, fmt.Errorf("%w: a quota of %.3f CPU is below the kernel's 1 ms minimum", ErrNoCgroup, cpus)
	}
	p := filepath.Join(root, parent, name)
	if err := os.MkdirAll(p, 0o755); err != nil {
		return nil, fmt.Errorf("%w: %w (run as root)", ErrNoCgroup, err)
	}
	for _, w := range []struct{ file, v string }{
		{"cpu.cfs_period_us", strconv.Itoa(periodUs)},
		{"cpu.cfs_quota_us", strconv.Itoa(quota)},
	} {
		if err := os.WriteFile(filepath.Join(p, w.file), []byte(w.v), 0o644); err != nil {
			return nil, fmt.Errorf("%w: write %s: %w", ErrNoCgroup, w.file, err)
		}
	}
	return &Cgroup{Path: p}, nil
}

// Throttled returns cpu.stat's nr_throttled and throttled_time (seconds).
func (c *Cgroup) Throttled() (periods int64, secs float64) {
	if c == nil {
		return 0, 0
	}
	b, err := os.ReadFile(filepath.Join(c.Path, "cpu.stat"))
	if err != nil {
		return 0, 0
	}
	for l := range strings.SplitSeq(string(b), "\n") {
		k, v, _ := strings.Cut(l, " ")
		n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		switch k {
		case "nr_throttled":
			periods = n
		case "throttled_time":
			secs = float64(n) / 1e9
		}
	}
	return periods, secs
}

// Remove removes the group; its processes must have exited.
func (c *Cgroup) Remove() error {
	if c == nil {
		return nil
	}
	var err error
	for range 50 { // the kernel frees a group a moment after its last task exits
		if err = os.Remove(c.Path); err == nil || os.IsNotExist(err) {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("remove cgroup %s: %w", c.Path, err)
}

// Proc is a child process with its output in a log file.
type Proc struct {
	Name string
	Cmd  *exec.Cmd
	Log  string
	done chan error
}

// StartProc starts argv with its output appended to dir/name.log. With cg,
// the process enters the group before it execs argv (a shell writes its own
// pid to cgroup.procs, then execs), so it is limited from its first
// instruction and keeps the pid Proc reports.
func StartProc(dir, name string, cg *Cgroup, argv ...string) (*Proc, error) {
	logPath := filepath.Join(dir, name+".log")
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	var cmd *exec.Cmd
	if cg != nil {
		script := `echo $$ > "$0/cgroup.procs" || exit 97; exec "$@"`
		cmd = exec.Command("/bin/sh", append([]string{"-c", script, cg.Path}, argv...)...)
	} else {
		cmd = exec.Command(argv[0], argv[1:]...)
	}
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &Proc{Name: name, Cmd: cmd, Log: logPath, done: make(chan error, 1)}
	go func() { p.done <- cmd.Wait(); f.Close() }()
	if cg != nil {
		if err := p.checkCgroup(cg); err != nil {
			p.Kill()
			return nil, err
		}
	}
	return p, nil
}

// checkCgroup waits until /proc/<pid>/cgroup shows the process in cg.
func (p *Proc) checkCgroup(cg *Cgroup) error {
	rel := strings.TrimPrefix(cg.Path, CgroupRoot)
	deadline := time.Now().Add(5 * time.Second)
	for {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", p.Cmd.Process.Pid))
		if err == nil {
			for l := range strings.SplitSeq(string(b), "\n") {
				// hierarchy-id:controllers:path, e.g. 4:cpu,cpuacct:/joinery-bench/node1
				parts := strings.SplitN(l, ":", 3)
				if len(parts) == 3 && strings.Contains(","+parts[1]+",", ",cpu,") && parts[2] == rel {
					return nil
				}
			}
		}
		if !p.Running() {
			return fmt.Errorf("%w: %s exited before entering %s (see %s)", ErrNoCgroup, p.Name, cg.Path, p.Log)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%w: %s is not in %s after 5s: /proc/%d/cgroup:\n%s", ErrNoCgroup, p.Name, cg.Path, p.Cmd.Process.Pid, b)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Pid is the process id.
func (p *Proc) Pid() int { return p.Cmd.Process.Pid }

// CPU is the process's CPU seconds so far.
func (p *Proc) CPU() (float64, error) { return ProcCPU(p.Pid()) }

// Running reports whether the process has not exited.
func (p *Proc) Running() bool {
	select {
	case err := <-p.done:
		p.done <- err
		return false
	default:
		return true
	}
}

// Stop sends SIGTERM and waits up to d, then SIGKILL.
func (p *Proc) Stop(d time.Duration) {
	_ = p.Cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-p.done:
		p.done <- err
	case <-time.After(d):
		p.Kill()
	}
}

// Kill sends SIGKILL and waits.
func (p *Proc) Kill() {
	_ = p.Cmd.Process.Kill()
	err := <-p.done
	p.done <- err
}

// pollEvery is how often the driver polls what it waits for.
const pollEvery = 50 * time.Millisecond

// RedisCluster is a Redis Cluster of masters without replicas, one
// redis-server process each.
type RedisCluster struct {
	Addrs   []string
	Servers []*testutil.RedisServer
}

// StartRedisCluster starts n redis-server processes with cluster mode on
// (persistence off: the benchmark measures the join, not the disk) in
// subdirectories of dir, each logging to its redis.log, joined with
// `redis-cli --cluster create --cluster-replicas 0`, and returns once the
// cluster is ok on every master (testutil.LaunchRedisCluster). A missing
// redis-server or redis-cli is an error saying how to install it.
func StartRedisCluster(ctx context.Context, dir string, n int) (*RedisCluster, error) {
	masters, _, err := testutil.LaunchRedisCluster(ctx, testutil.RedisConfig{Dir: dir, LogName: "redis.log"}, n, 0)
	if err != nil {
		return nil, fmt.Errorf("fleetbench: %w", err)
	}
	c := &RedisCluster{Servers: masters}
	for _, m := range masters {
		c.Addrs = append(c.Addrs, m.Addr)
	}
	return c, nil
}

// CPU returns the CPU seconds of each master.
func (c *RedisCluster) CPU() ([]float64, error) {
	out := make([]float64, len(c.Servers))
	for i, m := range c.Servers {
		v, err := ProcCPU(m.Pid())
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

// DBSize returns each master's DBSIZE (its keys: the keys of its slots).
func (c *RedisCluster) DBSize() ([]int64, error) {
	out := make([]int64, len(c.Addrs))
	for i, a := range c.Addrs {
		s, err := redisCmd(a, "DBSIZE")
		if err != nil {
			return nil, err
		}
		if out[i], err = strconv.ParseInt(strings.TrimSpace(s), 10, 64); err != nil {
			return nil, fmt.Errorf("DBSIZE on %s answered %q", a, s)
		}
	}
	return out, nil
}

// ResetStats zeroes every master's command counters (CONFIG RESETSTAT).
func (c *RedisCluster) ResetStats() error {
	for _, a := range c.Addrs {
		if _, err := redisCmd(a, "CONFIG", "RESETSTAT"); err != nil {
			return err
		}
	}
	return nil
}

// Commands returns each master's total_commands_processed (INFO stats)
// since the last ResetStats: the spread of the fleet's store traffic, which
// is writes (fenced snapshot scripts, offsets, timers) but for each key's
// activation's read.
func (c *RedisCluster) Commands() ([]int64, error) {
	out := make([]int64, len(c.Addrs))
	for i, a := range c.Addrs {
		s, err := redisCmd(a, "INFO", "stats")
		if err != nil {
			return nil, err
		}
		found := false
		for _, line := range strings.Split(s, "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "total_commands_processed:"); ok {
				if out[i], err = strconv.ParseInt(v, 10, 64); err != nil {
					return nil, fmt.Errorf("INFO stats on %s: %q", a, line)
				}
				found = true
			}
		}
		if !found {
			return nil, fmt.Errorf("INFO stats on %s has no total_commands_processed", a)
		}
	}
	return out, nil
}

// FlushAll empties every master.
func (c *RedisCluster) FlushAll() error {
	for _, a := range c.Addrs {
		if _, err := redisCmd(a, "FLUSHALL"); err != nil {
			return err
		}
	}
	return nil
}

// Stop stops every master.
func (c *RedisCluster) Stop() {
	for _, m := range c.Servers {
		m.Stop()
	}
}

// redisCmd sends one command in RESP and returns a simple, integer or bulk
// string reply (an error reply as an error).
func redisCmd(addr string, args ...string) (string, error) {
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := c.Write([]byte(b.String())); err != nil {
		return "", err
	}
	return readReply(bufio.NewReader(c))
}

func readReply(r *bufio.Reader) (string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	line = strings.TrimRight(line, "\r\n")
	if line == "" {
		return "", errors.New("empty redis reply")
	}
	switch line[0] {
	case '+', ':':
		return line[1:], nil
	case '-':
		return "", fmt.Errorf("redis: %s", line[1:])
	case '$':
		n, err := strconv.Atoi(line[1:])
		if err != nil || n < 0 {
			return "", err
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return "", err
		}
		return string(buf[:n]), nil
	}
	return "", fmt.Errorf("unexpected redis reply %q", line)
}
