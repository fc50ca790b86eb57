package job

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Load reads, parses and validates a job file. Unknown fields are errors.
func Load(path string) (*Spec, error) {
	p, err := LoadPlan(path)
	if err != nil {
		return nil, err
	}
	return p.Spec, nil
}

// LoadPlan reads, parses and compiles a job file (Compile).
func LoadPlan(path string) (*Plan, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	p, err := parse(b, filepath.Dir(path))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return p, nil
}

// Parse parses and validates a job file's contents (relative paths are
// relative to the working directory).
func Parse(b []byte) (*Spec, error) {
	p, err := parse(b, "")
	if err != nil {
		return nil, err
	}
	return p.Spec, nil
}

// parse parses and compiles a job file's contents; dir is the job file's
// directory. Secrets are expanded and read (secrets.go) before the
// JOINERY_* overrides; every problem is reported at once.
func parse(b []byte, dir string) (*Plan, error) {
	s := Spec{dir: dir}
	d := yaml.NewDecoder(bytes.NewReader(b))
	d.KnownFields(true)
	if err := d.Decode(&s); err != nil {
		return nil, fmt.Errorf("job: parse: %w", err)
	}
	s.dir, s.lookup = dir, os.LookupEnv
	secretErr := s.expandSecrets(os.LookupEnv)
	s.applyEnv(os.Getenv)
	envErr := s.applyExpectEnv(os.Getenv)
	s.applyRedisClusterEnv(os.Getenv)
	p, err := Compile(&s)
	if err := errors.Join(secretErr, envErr, err); err != nil {
		return nil, err
	}
	return p, nil
}

// Environment variables that override the job file, so one file (a Helm
// ConfigMap) serves every pod of a fleet. Each one, when set and non-empty,
// wins over the file.
const (
	EnvNodeName  = "JOINERY_NODE_NAME"      // cluster.node_name
	EnvAdvertise = "JOINERY_ADVERTISE_ADDR" // cluster.advertise
	EnvSeeds     = "JOINERY_SEEDS"          // cluster.seeds, comma separated
	EnvRedisAddr = "JOINERY_REDIS_ADDR"     // state.redis.addr
	EnvToken     = "JOINERY_TOKEN"          // admin.token
	EnvReadToken = "JOINERY_READ_TOKEN"     // admin.read_token
	EnvInsecure  = "JOINERY_ADMIN_INSECURE" // admin.insecure ("true")
	EnvAdminAddr = "JOINERY_ADMIN_ADDR"     // admin.addr
	EnvExpect    = "JOINERY_EXPECT"         // cluster.expect (the Helm chart's replicaCount)
	// EnvRedisUsername, EnvRedisTLS ("true") and EnvRedisTLSCA (a CA file;
	// implies TLS) set state.redis.username and state.redis.tls, for the
	// Helm chart's redis.username and redis.tls values.
	EnvRedisUsername = "JOINERY_REDIS_USERNAME"
	EnvRedisTLS      = "JOINERY_REDIS_TLS"
	EnvRedisTLSCA    = "JOINERY_REDIS_TLS_CA"
)

func (s *Spec) applyEnv(getenv func(string) string) {
	if v := getenv(EnvNodeName); v != "" {
		s.Cluster.NodeName = v
	}
	if v := getenv(EnvAdvertise); v != "" {
		s.Cluster.Advertise = v
	}
	if v := getenv(EnvSeeds); v != "" {
		s.Cluster.Seeds = nil
		for _, seed := range strings.Split(v, ",") {
			if seed = strings.TrimSpace(seed); seed != "" {
				s.Cluster.Seeds = append(s.Cluster.Seeds, seed)
			}
		}
	}
	if v := getenv(EnvRedisAddr); v != "" {
		s.State.Redis.Addr = v
	}
	if v := getenv(EnvToken); v != "" {
		s.Admin.Token = v
	}
	if v := getenv(EnvReadToken); v != "" {
		s.Admin.ReadToken = v
	}
	if getenv(EnvInsecure) == "true" {
		s.Admin.Insecure = true
	}
	if v := getenv(EnvAdminAddr); v != "" {
		s.Admin.Addr = v
	}
	if v := getenv(EnvRedisUsername); v != "" {
		s.State.Redis.Username = v
	}
	if getenv(EnvRedisTLS) == "true" {
		s.State.Redis.TLS.Enabled = true
	}
	if v := getenv(EnvRedisTLSCA); v != "" {
		s.State.Redis.TLS.Enabled, s.State.Redis.TLS.CAFile = true, v
	}
}

// applyExpectEnv sets cluster.expect from EnvExpect, when set and non-empty.
func (s *Spec) applyExpectEnv(getenv func(string) string) error {
	v := strings.TrimSpace(getenv(EnvExpect))
	if v == "" {
		return nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return fmt.Errorf("cluster.expect: %s must be a whole number of nodes, 0 or more (got %q)", EnvExpect, v)
	}
	s.Cluster.Expect = n
	return nil
}

// Resolve returns p relative to the job file's directory (absolute paths and "-" unchanged).
func (s *Spec) Resolve(p string) string {
	if p == "" || p == "-" || filepath.IsAbs(p) || s.dir == "" {
		return p
	}
	return filepath.Join(s.dir, p)
}
