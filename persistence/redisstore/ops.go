package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/joinery/joinery/persistence"
	"github.com/joinery/joinery/record"
)

// scriptCall is one call of a script: its keys and arguments.
type scriptCall struct {
	keys []string
	args []any
}

// runScripts runs calls of script in one pipeline (on a cluster, one per
// master, sent in parallel; go-redis follows MOVED and ASK per command).
// Calls answered NOSCRIPT (a node that has not seen the script: a new or
// restarted one, or one that took over a slot) run again with EVAL in a
// second pipeline. Calls answered TRYAGAIN during a slot migration are
// sent again, alone, with backoff (runScriptsWait, retry.go). It returns
// every call's reply, or the first error.
func (s *Store) runScripts(ctx context.Context, script *redis.Script, calls []scriptCall) ([]any, error) {
	return s.runScriptsWait(ctx, script, calls, true)
}

// runScriptsOnce sends calls of script once (EVALSHA, then EVAL for those
// answered NOSCRIPT); wait false leaves out the WAIT of Config.MinReplicas
// (for scripts that only read). It returns each call's reply and error
// (redis.Nil is no error), and the error of a WAIT that fell short.
func (s *Store) runScriptsOnce(ctx context.Context, script *redis.Script, calls []scriptCall, wait bool) ([]any, []error, error) {
	out, errs := make([]any, len(calls)), make([]error, len(calls))
	if len(calls) == 1 && (s.cfg.MinReplicas == 0 || !wait) {
		// One call needs no pipeline: EVALSHA, and EVAL after NOSCRIPT.
		cmd := evalSha(ctx, script, calls[0])
		_ = s.client.Process(ctx, cmd)
		if err := cmd.Err(); err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
			cmd = script.Eval(ctx, s.client, calls[0].keys, calls[0].args...)
		}
		v, err := cmd.Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			errs[0] = err
		}
		out[0] = v
		return out, errs, nil
	}
	cmds := make([]*redis.Cmd, len(calls))
	var waits []*redis.Cmd
	_, _ = s.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, c := range calls {
			cmds[i] = evalSha(ctx, script, c)
			_ = p.Process(ctx, cmds[i])
		}
		if wait {
			waits = s.appendWait(ctx, p, waits)
		}
		return nil
	})
	var again []int
	for i, c := range cmds {
		if err := c.Err(); err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
			again = append(again, i)
		}
	}
	if len(again) > 0 {
		_, _ = s.client.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, i := range again {
				cmds[i] = script.Eval(ctx, p, calls[i].keys, calls[i].args...)
			}
			if wait {
				waits = s.appendWait(ctx, p, waits)
			}
			return nil
		})
	}
	for i, c := range cmds {
		v, err := c.Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			errs[i] = err
		}
		out[i] = v
	}
	return out, errs, s.checkWaits(waits)
}

// evalSha is the EVALSHA of script for c, as go-redis's EvalSha builds it
// (first key at position 3, for the cluster client's routing) but with
// the keys passed as pointers into c.keys: go-redis writes a *string as
// the string, and a string in an interface would be one allocation per
// key. c must not change until the command has run.
func evalSha(ctx context.Context, script *redis.Script, c scriptCall) *redis.Cmd {
	args := make([]any, 3+len(c.keys)+len(c.args))
	args[0], args[1], args[2] = "evalsha", script.Hash(), len(c.keys)
	for i := range c.keys {
		args[3+i] = &c.keys[i]
	}
	copy(args[3+len(c.keys):], c.args)
	cmd := redis.NewCmd(ctx, args...)
	if len(c.keys) > 0 {
		cmd.SetFirstKeyPos(3)
	}
	return cmd
}

// appendWait queues a WAIT for Config.MinReplicas replicas at the end of
// pipeline p (when MinReplicas is set): it runs on the connection that
// sent the writes before it, so it waits for exactly those.
func (s *Store) appendWait(ctx context.Context, p redis.Pipeliner, waits []*redis.Cmd) []*redis.Cmd {
	if s.cfg.MinReplicas == 0 {
		return waits
	}
	return append(waits, p.Do(ctx, "WAIT", s.cfg.MinReplicas, s.cfg.replicaTimeout().Milliseconds()))
}

// checkWaits turns a WAIT that reached fewer than Config.MinReplicas
// replicas into an error wrapping ErrNotReplicated.
func (s *Store) checkWaits(waits []*redis.Cmd) error {
	for _, w := range waits {
		n, err := w.Int64()
		if err != nil {
			return err
		}
		if n < int64(s.cfg.MinReplicas) {
			return fmt.Errorf("%w: %d of %d replicas within %s", ErrNotReplicated, n, s.cfg.MinReplicas, s.cfg.replicaTimeout())
		}
	}
	return nil
}

// Epoch implements persistence.Store with one HGET of the key hash's
// epoch field (and, when the field is missing in a store that may hold the
// job's keys in an earlier layout, one of its layout-2 hash and one GET of
// its layout-1 epoch key: a key not yet moved; Epoch reads and moves
// nothing).
func (s *Store) Epoch(ctx context.Context, job string, key record.Key) (int64, error) {
	if s.closed.Load() {
		return 0, persistence.ErrClosed
	}
	names, err := s.names(ctx, job)
	if err != nil {
		return 0, err
	}
	v, err := s.client.HGet(ctx, names.keyHash(key), epochField).Result()
	if gp := names.keyPrefix(key); errors.Is(err, redis.Nil) && names.legacy {
		if v, err = s.client.HGet(ctx, keyHash2(gp, key), epochField).Result(); errors.Is(err, redis.Nil) {
			v, err = s.client.Get(ctx, epochKey1(gp, key)).Result()
		}
	}
	if errors.Is(err, redis.Nil) {
		return 0, nil
	}
	if err != nil {
		return 0, wrap("epoch", err)
	}
	e, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("redisstore: owner epoch %q of key %q of job %q: %w", v, key, job, err)
	}
	return e, nil
}

// keysScanCount is the COUNT hint of each SCAN in Keys.
const keysScanCount = 1000

// globEscaper escapes the characters that are special in a SCAN MATCH
// pattern.
var globEscaper = strings.NewReplacer(`\`, `\\`, "*", `\*`, "?", `\?`, "[", `\[`, "]", `\]`)

// Keys implements persistence.Store. It walks the keyspace of the server
// (of every master of a cluster, in parallel) with SCAN MATCH
// "{<id>*" (and, in a store that may hold the job's keys in an
// earlier layout, "<prefix>:{<job>:*}:*" too), so a job with millions of
// keys does not block a server; each name found is kept when it is a key
// hash of one of the job's groups whose base field exists (HEXISTS, one
// pipeline per SCAN page) or a layout-1 state key of one (a key not yet
// moved). It reads every key of the server's keyspace that matches, so
// its cost grows with the whole database, not the job: it is for
// inspection. Keys saved or deleted while it runs may or may not be
// listed.
func (s *Store) Keys(ctx context.Context, job string) ([]record.Key, error) {
	if s.closed.Load() {
		return nil, persistence.ErrClosed
	}
	names, err := s.names(ctx, job)
	if err != nil {
		return nil, err
	}
	matches := []string{"{" + names.id + "*"}
	if names.legacy {
		matches = append(matches, globEscaper.Replace(s.prefix)+":{"+globEscaper.Replace(tagEscaper.Replace(job))+":*}:*")
	}
	var mu sync.Mutex
	seen := make(map[string]struct{})
	var scanMatch func(ctx context.Context, c *redis.Client, match string) error
	scan := func(ctx context.Context, c *redis.Client) error {
		for _, match := range matches {
			if err := scanMatch(ctx, c, match); err != nil {
				return err
			}
		}
		return nil
	}
	scanMatch = func(ctx context.Context, c *redis.Client, match string) error {
		var cursor uint64
		for {
			page, next, err := c.Scan(ctx, cursor, match, keysScanCount).Result()
			if err != nil {
				return err
			}
			var found []string
			var hashes []string
			for _, name := range page {
				key, hash, ok := names.keyOfName(s.prefix, name)
				switch {
				case !ok:
				case hash:
					hashes = append(hashes, name)
					found = append(found, key)
				default:
					mu.Lock()
					seen[key] = struct{}{}
					mu.Unlock()
				}
			}
			if len(hashes) > 0 {
				cmds := make([]*redis.BoolCmd, len(hashes))
				_, _ = c.Pipelined(ctx, func(p redis.Pipeliner) error {
					for i, h := range hashes {
						cmds[i] = p.HExists(ctx, h, baseField)
					}
					return nil
				})
				for i, c := range cmds {
					has, err := c.Result()
					if err != nil {
						return err
					}
					if has {
						mu.Lock()
						seen[found[i]] = struct{}{}
						mu.Unlock()
					}
				}
			}
			if cursor = next; cursor == 0 {
				return nil
			}
		}
	}
	switch c := s.client.(type) {
	case *redis.ClusterClient:
		err = c.ForEachMaster(ctx, scan)
	case *redis.Client:
		err = scan(ctx, c)
	}
	if err != nil {
		return nil, wrap("keys", err)
	}
	out := make([]record.Key, 0, len(seen))
	for m := range seen {
		out = append(out, record.Key(m))
	}
	return out, nil
}

// keyOfName returns the join key of a key name of the job of n: a key
// hash (hash true; in layout 3, or layout 2 in a store that may hold
// them) or a layout-1 state key, and false for any other name (another
// job's, an outbox, a group key). A layout-3 name is the short tag of the
// key's group, then the key; a layout-2 or layout-1 name's group prefix is
// the name up to the first "}" and the ":" after it (a tag holds no "}",
// a key prefix no brace), and must be the prefix of the key's group.
func (n *jobNames) keyOfName(prefix, name string) (key string, hash, ok bool) {
	if strings.HasPrefix(name, "{") {
		b := strings.IndexByte(name, '}')
		if b < 0 {
			return "", false, false
		}
		key = name[b+1:]
		return key, true, n.short[groupOf(key)] == name[:b+1]
	}
	if !n.legacy || !strings.HasPrefix(name, prefix+":{") {
		return "", false, false
	}
	b := strings.IndexByte(name, '}')
	if b < 0 || b+1 >= len(name) || name[b+1] != ':' {
		return "", false, false
	}
	gp, rest := name[:b+2], name[b+2:]
	switch {
	case strings.HasPrefix(rest, hashKind):
		key, hash = rest[len(hashKind):], true
	case strings.HasPrefix(rest, "state:"):
		key = rest[len("state:"):]
	default:
		return "", false, false
	}
	if n.prefixes[groupOf(key)] != gp {
		return "", false, false
	}
	return key, hash, true
}

// Close closes the connection pool. Calls in flight fail with
// persistence.ErrClosed. It is idempotent.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	if err := s.client.Close(); err != nil && !errors.Is(err, redis.ErrClosed) {
		return fmt.Errorf("redisstore: close: %w", err)
	}
	return nil
}
