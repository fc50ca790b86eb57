package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/joinery/joinery/admin"
	"github.com/joinery/joinery/connopts/redisopts"
	"github.com/joinery/joinery/job"
	"github.com/joinery/joinery/joins"
	"github.com/joinery/joinery/persistence/redisstore"
)

func membersCmd(o *options) *cobra.Command {
	return &cobra.Command{
		Use:     "members",
		Short:   "List the cluster members the node sees",
		Args:    cobra.NoArgs,
		Example: "  joinctl members\n  joinctl members -o yaml",
		RunE: runE(func(cmd *cobra.Command, _ []string) error {
			c, err := o.client()
			if err != nil {
				return err
			}
			ctx, cancel := o.ctx(cmd)
			defer cancel()
			ms, err := c.Members(ctx)
			if err != nil {
				return err
			}
			return render(cmd.OutOrStdout(), o.output, ms, func(w io.Writer) { membersTable(w, ms) })
		}),
	}
}

func keyCmd(o *options, getenv func(string) string) *cobra.Command {
	key := &cobra.Command{
		Use:   "key",
		Short: "Locate, inspect, explain, passivate or evict one join key",
		Example: `  joinctl key locate users-domains 42
  joinctl key inspect users-domains 42
  joinctl key why ads-visits home`,
	}
	key.AddCommand(&cobra.Command{
		Use:     "locate JOB KEY",
		Short:   "Show which member owns a key and whether its actor is active",
		Args:    cobra.ExactArgs(2),
		Example: "  joinctl key locate users-domains 42",
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			c, err := o.client()
			if err != nil {
				return err
			}
			ctx, cancel := o.ctx(cmd)
			defer cancel()
			loc, err := c.Locate(ctx, args[0], args[1])
			if err != nil {
				return err
			}
			return render(cmd.OutOrStdout(), o.output, loc, func(w io.Writer) { locationTable(w, loc) })
		}),
	})
	key.AddCommand(inspectCmd(o, getenv))
	key.AddCommand(&cobra.Command{
		Use:   "why JOB KEY",
		Short: "Show what a key's event-time join waits for and which partition holds the watermark back",
		Long: `why lists what the key's join is waiting for — a window that has not fired, an
outer row that is emitted with nulls unless a match arrives, a probe waiting
for the watermark to pass it — each with the watermark it needs, next to the
current watermark and the source partition that holds it back (lagging or,
when it is idle, none). A changelog (cdc) join never waits on time.`,
		Args:    cobra.ExactArgs(2),
		Example: "  joinctl key why ads-visits home\n  joinctl key why ads-visits home -o json",
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			c, err := o.client()
			if err != nil {
				return err
			}
			ctx, cancel := o.ctx(cmd)
			defer cancel()
			why, err := c.Why(ctx, args[0], args[1])
			if err != nil {
				return err
			}
			return render(cmd.OutOrStdout(), o.output, why, func(w io.Writer) { whyTable(w, why) })
		}),
	})
	for _, a := range []struct {
		name, past, short string
		do                func(*admin.Client, context.Context, string, string) error
	}{
		{"passivate", "passivated", "Make a key's actor persist its state and stop (needs the token)", (*admin.Client).Passivate},
		{"evict", "evicted", "Drop a key's actor without persisting; it reloads from its last snapshot (needs the token)", (*admin.Client).Evict},
	} {
		key.AddCommand(&cobra.Command{
			Use:     a.name + " JOB KEY",
			Short:   a.short,
			Args:    cobra.ExactArgs(2),
			Example: fmt.Sprintf("  JOINERY_TOKEN=s3cret joinctl key %s users-domains 42\n  joinctl --token s3cret key %s users-domains 42", a.name, a.name),
			RunE: runE(func(cmd *cobra.Command, args []string) error {
				c, err := o.client()
				if err != nil {
					return err
				}
				ctx, cancel := o.ctx(cmd)
				defer cancel()
				if err := a.do(c, ctx, args[0], args[1]); err != nil {
					return err
				}
				res := actionResult{Action: a.name, Job: args[0], Key: args[1], OK: true}
				return render(cmd.OutOrStdout(), o.output, res, func(w io.Writer) {
					fmt.Fprintf(w, "%s %s/%s\n", a.past, args[0], args[1])
				})
			}),
		})
	}
	return key
}

// actionResult is the json/yaml output of passivate and evict.
type actionResult struct {
	Action string `json:"action"`
	Job    string `json:"job"`
	Key    string `json:"key"`
	OK     bool   `json:"ok"`
}

type offlineFlags struct {
	offline         bool
	redisTLS        bool
	redisCAFile     string
	config          string
	redis           string
	redisCluster    []string
	redisUser       string
	redisPassword   string
	redisDB         int
	leftPK, rightPK string
	eventTime       bool
}

func inspectCmd(o *options, getenv func(string) string) *cobra.Command {
	f := &offlineFlags{}
	cmd := &cobra.Command{
		Use:   "inspect JOB KEY",
		Short: "Show a key's full state: rows, applied offsets, epoch, timers",
		Long: `Show a key's full state: its left row, right rows, applied offset per source
partition, fencing epoch, pending timers and late/dead-letter counts.

With --offline the state is read from the key's snapshot in Redis, with no node
running: give the Redis address (--redis, --redis-cluster for a Redis Cluster,
or the job file's state.redis) and the join's primary keys (--config job.yaml,
or --left-pk/--right-pk).`,
		Args: cobra.ExactArgs(2),
		Example: `  joinctl key inspect users-domains 42
  joinctl key inspect users-domains 42 -o json
  joinctl key inspect users-domains 42 --offline --config job.yaml
  joinctl key inspect users-domains 42 --offline --redis 127.0.0.1:6379 --left-pk id --right-pk id
  joinctl key inspect users-domains 42 --offline --redis-cluster r0:6379,r1:6379 --left-pk id --right-pk id`,
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			var ks admin.KeyState
			var err error
			if f.offline {
				ks, err = inspectOffline(cmd, o, f, getenv, args[0], args[1])
			} else {
				if err := f.onlineCheck(cmd); err != nil {
					return err
				}
				var c *admin.Client
				if c, err = o.client(); err != nil {
					return err
				}
				ctx, cancel := o.ctx(cmd)
				defer cancel()
				ks, err = c.Inspect(ctx, args[0], args[1])
			}
			if err != nil {
				return err
			}
			return render(cmd.OutOrStdout(), o.output, ks, func(w io.Writer) { keyStateTable(w, ks) })
		}),
	}
	fl := cmd.Flags()
	fl.BoolVar(&f.offline, "offline", false, "read the key's snapshot from Redis instead of asking a node")
	fl.StringVar(&f.config, "config", "", "job file giving the join's primary keys and state.redis (with --offline)")
	fl.StringVar(&f.redis, "redis", "", "Redis host:port (with --offline; default the job file's state.redis.addr)")
	fl.StringSliceVar(&f.redisCluster, "redis-cluster", nil, "Redis Cluster nodes, host:port,... (with --offline; instead of --redis; default the job file's state.redis.cluster.addrs)")
	fl.StringVar(&f.redisUser, "redis-username", "", "Redis ACL user (with --offline)")
	fl.StringVar(&f.redisPassword, "redis-password", "", "Redis password (with --offline; env "+envRedisPassword+")")
	fl.IntVar(&f.redisDB, "redis-db", 0, "Redis database number (with --offline)")
	fl.BoolVar(&f.redisTLS, "redis-tls", false, "connect to Redis with TLS, system roots (with --offline; --config uses state.redis.tls)")
	fl.StringVar(&f.redisCAFile, "redis-ca-file", "", "PEM CA bundle of Redis's certificate; implies --redis-tls (with --offline)")
	fl.StringVar(&f.leftPK, "left-pk", "id", "left side's primary-key column (with --offline, without --config)")
	fl.StringVar(&f.rightPK, "right-pk", "id", "right side's primary-key column (with --offline, without --config)")
	fl.BoolVar(&f.eventTime, "event-time", false, "the job is an event-time join (with --offline, without --config)")
	return cmd
}

// onlineCheck refuses offline-only flags without --offline.
func (f *offlineFlags) onlineCheck(cmd *cobra.Command) error {
	for _, n := range []string{"config", "redis", "redis-cluster", "redis-username", "redis-password", "redis-db", "redis-tls", "redis-ca-file", "left-pk", "right-pk", "event-time"} {
		if cmd.Flags().Changed(n) {
			return usageErr("--%s needs --offline", n)
		}
	}
	return nil
}

func inspectOffline(cmd *cobra.Command, o *options, f *offlineFlags, getenv func(string) string, jobName, key string) (admin.KeyState, error) {
	if f.redis != "" && len(f.redisCluster) > 0 {
		return admin.KeyState{}, usageErr("--redis and --redis-cluster exclude each other")
	}
	rc := redisstore.Config{Options: redisopts.Options{Addr: f.redis, Username: f.redisUser, Password: f.redisPassword, DB: f.redisDB}, Cluster: f.redisCluster}
	var spec *joins.CDCSpec
	if f.config != "" {
		if cmd.Flags().Changed("left-pk") || cmd.Flags().Changed("right-pk") {
			return admin.KeyState{}, usageErr("--left-pk/--right-pk and --config exclude each other")
		}
		plan, err := job.LoadPlan(f.config)
		if err != nil {
			return admin.KeyState{}, usageErr("--config: %v", err)
		}
		js := plan.Spec
		switch {
		case plan.CDC != nil:
			spec = plan.CDC
		case !js.Timed(): // an event-time job's state needs no spec: spec stays nil
			// A cdc-multi job: refused as before (its state is not one pair).
			if spec, err = js.CDCSpec(); err != nil {
				return admin.KeyState{}, usageErr("--config: %v", err)
			}
		}
		if js.Name != jobName {
			fmt.Fprintf(cmd.ErrOrStderr(), "joinctl: note: job file %s is job %q, inspecting job %q\n", f.config, js.Name, jobName)
		}
		r := js.State.Redis
		if !cmd.Flags().Changed("redis") && !cmd.Flags().Changed("redis-cluster") && js.State.Store == "redis" {
			rc.Addr, rc.Cluster = r.Addr, r.Cluster.Addrs
		}
		if !cmd.Flags().Changed("redis-username") {
			rc.Username = r.Username
		}
		if !cmd.Flags().Changed("redis-password") {
			rc.Password = r.Password
		}
		if !cmd.Flags().Changed("redis-db") {
			rc.DB = r.DB
		}
		if js.State.Store == "redis" && !cmd.Flags().Changed("redis") {
			rc.TLS = plan.StoreTLS // the job's state.redis.tls (CA, client certificate, server name)
		}
	} else if !f.eventTime {
		spec = &joins.CDCSpec{Left: joins.SideSpec{PK: f.leftPK}, Right: joins.SideSpec{PK: f.rightPK}}
	}
	if rc.Password == "" {
		rc.Password = getenv(envRedisPassword)
	}
	if f.redisTLS || f.redisCAFile != "" {
		tc, err := clientTLS(f.redisCAFile, "", "")
		if err != nil {
			return admin.KeyState{}, usageErr("--redis-ca-file: %v", err)
		}
		rc.TLS = tc
	}
	if rc.Addr == "" && len(rc.Cluster) == 0 {
		return admin.KeyState{}, usageErr("--offline needs --redis ADDR or --redis-cluster ADDR,... (or --config with a state.redis.addr or state.redis.cluster)")
	}
	ctx, cancel := o.ctx(cmd)
	defer cancel()
	store, err := redisstore.New(ctx, rc)
	if err != nil {
		return admin.KeyState{}, err
	}
	defer store.Close()
	return admin.InspectOffline(ctx, store, spec, jobName, key)
}

func watermarksCmd(o *options) *cobra.Command {
	var watch time.Duration
	cmd := &cobra.Command{
		Use:   "watermarks JOB",
		Short: "Show a job's watermark and lag per source partition",
		Args:  cobra.ExactArgs(1),
		Example: `  joinctl watermarks users-domains
  joinctl watermarks users-domains -w 2s     # redraw every 2s until Ctrl-C`,
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			if cmd.Flags().Changed("watch") && watch <= 0 {
				return usageErr("-w/--watch: must be positive")
			}
			c, err := o.client()
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			show := func() error {
				ctx, cancel := o.ctx(cmd)
				defer cancel()
				wm, err := c.Watermarks(ctx, args[0])
				if err != nil {
					return err
				}
				return render(out, o.output, wm, func(w io.Writer) { watermarksTable(w, wm) })
			}
			if watch == 0 {
				return show()
			}
			return watchLoop(cmd.Context(), out, cmd.ErrOrStderr(), watch, o.output == "table", "watermarks "+args[0], show)
		}),
	}
	cmd.Flags().DurationVarP(&watch, "watch", "w", 0, "redraw every interval (e.g. 2s) until Ctrl-C")
	return cmd
}

// watchLoop calls show now and then every interval until ctx ends. An error
// of the first call ends the loop; later errors are shown and the loop goes
// on (a node restarting). For tables (header) each draw starts with a header
// line, and on a terminal the screen is cleared first; JSON and YAML
// documents are written one after another.
func watchLoop(ctx context.Context, out, errOut io.Writer, interval time.Duration, header bool, what string, show func() error) error {
	tty := isTerminal(out) && header
	t := time.NewTicker(interval)
	defer t.Stop()
	for i := 0; ; i++ {
		if tty {
			fmt.Fprint(out, "\x1b[H\x1b[2J")
		}
		if header {
			fmt.Fprintf(out, "Every %s: %s\t%s\n\n", interval, what, time.Now().Format(time.DateTime))
		}
		if err := show(); err != nil {
			if i == 0 || ctx.Err() != nil {
				if ctx.Err() != nil {
					return nil
				}
				return err
			}
			fmt.Fprintf(errOut, "joinctl: %v\n", err)
		}
		if header && !tty {
			fmt.Fprintln(out)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

func hotCmd(o *options) *cobra.Command {
	var n int
	cmd := &cobra.Command{
		Use:   "hot JOB",
		Short: "List a job's busiest keys (events per second, state size)",
		Args:  cobra.ExactArgs(1),
		Example: `  joinctl hot users-domains
  joinctl hot users-domains -n 50 -o json`,
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			if n < 1 || n > admin.MaxHot {
				return usageErr("-n: want 1 to %d (got %d)", admin.MaxHot, n)
			}
			c, err := o.client()
			if err != nil {
				return err
			}
			ctx, cancel := o.ctx(cmd)
			defer cancel()
			hot, err := c.Hot(ctx, args[0], n)
			if err != nil {
				return err
			}
			return render(cmd.OutOrStdout(), o.output, hot, func(w io.Writer) { hotTable(w, hot) })
		}),
	}
	cmd.Flags().IntVarP(&n, "limit", "n", 10, "how many keys (1 to 1000)")
	return cmd
}
