package lint

import (
	"bufio"
	"bytes"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const mod = "github.com/joinery/joinery/"

// pkgInfo is one package of the module as go list reports it.
type pkgInfo struct {
	path    string   // relative to the module: "joins", "persistence/redisstore"
	imports []string // direct imports, full paths
	deps    []string // every transitive dependency, full paths
}

func listPackages(t *testing.T) []pkgInfo {
	t.Helper()
	cmd := exec.Command("go", "list", "-f", "{{.ImportPath}}|{{join .Imports \" \"}}|{{join .Deps \" \"}}", mod+"...")
	cmd.Dir = "../.."
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("go list: %v\n%s", err, errb.String())
	}
	var ps []pkgInfo
	sc := bufio.NewScanner(&out)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		f := strings.SplitN(sc.Text(), "|", 3)
		if len(f) != 3 {
			continue
		}
		ps = append(ps, pkgInfo{path: strings.TrimPrefix(f[0], mod), imports: strings.Fields(f[1]), deps: strings.Fields(f[2])})
	}
	if len(ps) < 20 {
		t.Fatalf("go list found %d packages; the pattern is wrong", len(ps))
	}
	return ps
}

// under reports whether pkg is dir or inside it.
func under(pkg, dir string) bool { return pkg == dir || strings.HasPrefix(pkg, dir+"/") }

func isStd(p string) bool { return !strings.Contains(strings.SplitN(p, "/", 2)[0], ".") }

// Third-party modules that only their edge packages may import.
var (
	protoactor = "github.com/asynkron/protoactor-go"
	memberlist = "github.com/hashicorp/memberlist"
	goredis    = "github.com/redis/go-redis/"
	franz      = "github.com/twmb/franz-go"
)

// rule is one "must not" of a package's doc.
type rule struct {
	name string
	// applies selects the packages the rule is about.
	applies func(pkg string) bool
	// forbidden reports whether dep breaks the rule; direct tells an import
	// of the package itself from a transitive dependency.
	forbidden func(pkg, dep string, direct bool) bool
}

// allowed are known breaks of a rule, each with the work that removes it.
// An entry that no longer breaks its rule fails the test, so the list
// only shrinks.
var allowed = map[[2]string]string{}

var rules = []rule{
	{
		name:    "record is the leaf: standard library only",
		applies: func(p string) bool { return p == "record" },
		forbidden: func(_, dep string, _ bool) bool {
			return !isStd(dep)
		},
	},
	{
		name: "joins, timers and keycore are pure: they import only record, each other, jsonenc, rowcodec, stateparts and the reject reasons, no I/O, no clock (keycore), no protoactor, Redis, Kafka or memberlist",
		applies: func(p string) bool {
			return under(p, "joins") || under(p, "timers") || under(p, "keycore")
		},
		forbidden: func(pkg, dep string, direct bool) bool {
			if strings.HasPrefix(dep, mod) {
				rel := strings.TrimPrefix(dep, mod)
				ok := []string{"record", "joins", "timers", "internal/jsonenc", "internal/rowcodec", "internal/stateparts", "sinks/deadletter/reason"}
				if under(pkg, "keycore") {
					ok = append(ok, "keycore")
				}
				return !slices.ContainsFunc(ok, func(o string) bool { return under(rel, o) })
			}
			if !isStd(dep) {
				return true
			}
			if !direct {
				return false // fmt reaches os; what counts is what the package itself imports
			}
			io := []string{"net", "net/http", "os", "os/exec", "database/sql", "syscall"}
			if under(pkg, "keycore") {
				io = append(io, "time", "math/rand", "math/rand/v2", "sync")
			}
			return slices.Contains(io, dep)
		},
	},
	{
		name:    "the packed state parts are a leaf: standard library only (persistence and keycore share them)",
		applies: func(p string) bool { return p == "internal/stateparts" },
		forbidden: func(_, dep string, _ bool) bool {
			return !isStd(dep)
		},
	},
	{
		name:    "the reject reasons are a leaf: standard library only (the decoders import them)",
		applies: func(p string) bool { return p == "sinks/deadletter/reason" },
		forbidden: func(_, dep string, _ bool) bool {
			return !isStd(dep)
		},
	},
	{
		name:    "persistence knows no actors and no key core",
		applies: func(p string) bool { return under(p, "persistence") },
		forbidden: func(_, dep string, _ bool) bool {
			return strings.HasPrefix(dep, protoactor) || under(strings.TrimPrefix(dep, mod), "actors") && strings.HasPrefix(dep, mod) ||
				dep == mod+"keycore" || dep == mod+"node"
		},
	},
	{
		name:    "sinks do not import sources",
		applies: func(p string) bool { return under(p, "sinks") },
		forbidden: func(_, dep string, direct bool) bool {
			return direct && strings.HasPrefix(dep, mod+"sources/")
		},
	},
	{
		name:    "the connector registry imports no connector (they register in connectors/all)",
		applies: func(p string) bool { return p == "connectors" },
		forbidden: func(_, dep string, direct bool) bool {
			return direct && (strings.HasPrefix(dep, mod+"sources/") || strings.HasPrefix(dep, mod+"sinks/") || dep == mod+"ingest")
		},
	},
	{
		name:    "node opens sources, sinks, dead letters and HTTP ingest through connectors/all only",
		applies: func(p string) bool { return under(p, "node") },
		forbidden: func(_, dep string, direct bool) bool {
			if !direct || dep == mod+"sinks/deadletter" || dep == mod+"sinks/deadletter/reason" { // its Record and Writer types, the reject reasons
				return false
			}
			return strings.HasPrefix(dep, mod+"sources/") || strings.HasPrefix(dep, mod+"sinks/") || dep == mod+"ingest"
		},
	},
	{
		// Harnesses that drive a node or a connector (the benchmarks) live
		// beside their commands, in cmd/internal/.
		name:    "internal/ holds leaf helpers: nothing in it depends on node/, job/ or a connector (sources/, sinks/, ingest/, connectors/)",
		applies: func(p string) bool { return under(p, "internal") },
		forbidden: func(_, dep string, _ bool) bool {
			if !strings.HasPrefix(dep, mod) {
				return false
			}
			rel := strings.TrimPrefix(dep, mod)
			if rel == "sinks/deadletter/reason" {
				return false // the reject reasons: a leaf (standard library only) every part names its refusals from
			}
			return slices.ContainsFunc([]string{"node", "job", "sources", "sinks", "ingest", "connectors"}, func(o string) bool { return under(rel, o) })
		},
	},
	{
		name:    "memberlist only in cluster/",
		applies: func(p string) bool { return !under(p, "cluster") },
		forbidden: func(_, dep string, direct bool) bool {
			return direct && strings.HasPrefix(dep, memberlist)
		},
	},
	{
		name: "protoactor only in actors/, cluster/ and node/ (and their tests' helpers)",
		applies: func(p string) bool {
			return !under(p, "actors") && !under(p, "cluster") && !under(p, "node")
		},
		forbidden: func(_, dep string, direct bool) bool {
			return direct && strings.HasPrefix(dep, protoactor)
		},
	},
	{
		name: "go-redis only in the Redis store and the Redis connectors",
		applies: func(p string) bool {
			return !slices.ContainsFunc([]string{"persistence/redisstore", "connopts/redisopts", "sources/redisstream", "sinks/redisstream", "sinks/redishash", "ingest", "cmd/internal/bench", "internal/testutil", "cmd/internal/fleetbench", "cmd/internal/capbench"},
				func(o string) bool { return under(p, o) })
		},
		forbidden: func(_, dep string, direct bool) bool {
			return direct && strings.HasPrefix(dep, goredis)
		},
	},
	{
		name: "the Kafka client only in the Kafka connectors",
		applies: func(p string) bool {
			// cmd/internal/fleetbench drives a real broker (kfake) to feed the
			// fleet benchmark, and cmd/internal/bench one for its Kafka
			// systems; internal/testutil starts one for tests.
			return !slices.ContainsFunc([]string{"connopts/kafkaopts", "sources/kafka", "sinks/kafka", "ingest", "formats", "cmd/internal/fleetbench", "cmd/internal/bench", "internal/testutil"}, func(o string) bool { return under(p, o) })
		},
		forbidden: func(_, dep string, direct bool) bool {
			return direct && strings.HasPrefix(dep, franz)
		},
	},
}

// TestImportGraph fails when a package imports what its doc says it must
// not (cockroachdb/pebble's internal/lint TestForbiddenImports is the
// model). Known breaks are listed in allowed with the work that ends them.
func TestImportGraph(t *testing.T) {
	used := map[[2]string]bool{}
	for _, p := range listPackages(t) {
		for _, r := range rules {
			if !r.applies(p.path) {
				continue
			}
			check := func(dep string, direct bool) {
				if !r.forbidden(p.path, dep, direct) {
					return
				}
				k := [2]string{p.path, dep}
				if _, ok := allowed[k]; ok {
					used[k] = true
					return
				}
				how := "depends on"
				if direct {
					how = "imports"
				}
				t.Errorf("%s %s %s: %s", p.path, how, dep, r.name)
			}
			for _, d := range p.imports {
				check(d, true)
			}
			for _, d := range p.deps {
				if !slices.Contains(p.imports, d) {
					check(d, false)
				}
			}
		}
	}
	for k, why := range allowed {
		if !used[k] {
			t.Errorf("allowed break %s -> %s no longer happens: remove it from the list (%s)", k[0], k[1], why)
		}
	}
}
