# Joinery — see README.md. `make demo` and `make test` are the quickstart.
GO      ?= go
BIN     ?= bin
PKGS    ?= ./...
TESTFLAGS ?= -count=1 -timeout 20m
# Packages whose tests start protoactor actor systems in-process. protoactor-go
# itself has data races (disthash Manager.rdv swapped without a lock,
# remote.BlockList read without its lock, grpclog.SetLoggerV2 per remote start,
# endpointManager.stop vs. its readers, MemberList topology reads), which the
# race detector reports in any test that runs its remoting; these packages'
# tests therefore run without -race (cluster/ runs both ways: under -race its
# tests skip the remoting round trips, see cluster_test.go; cmd/internal/capbench's
# smoke test runs a node in process). Every other package runs with -race, and
# our own concurrent code outside them (actors.Writer, stores, sources) has
# race-checked tests of its own. See README "Tests".
NORACE_PKGS := ./node/... ./cluster/... ./chaos/... ./cmd/internal/capbench/...
RACE_PKGS = $(shell $(GO) list ./... | grep -v -e '/joinery/node$$' -e '/chaos$$' -e '/capbench$$')

.PHONY: all build demo test lint fmt vet tidy-check fuzz bench redis clean chaos

all: build

build:
	$(GO) build -o $(BIN)/joinery ./cmd/node
	$(GO) build -o $(BIN)/joinctl ./cmd/joinctl

## demo: run the users ⋈ domains example on the embedded store (no server needed).
demo: build
	$(BIN)/joinery run --config examples/users-domains/job.yaml

## test: the whole suite, with the race detector; installs redis-server if it can.
test: redis lint
	$(GO) test -race $(TESTFLAGS) $(RACE_PKGS)
	$(GO) test $(TESTFLAGS) $(NORACE_PKGS)

## redis: make sure redis-server (and kcat) are on PATH (Debian + root: installs them).
redis:
	@scripts/ensure-deps.sh

lint: fmt vet tidy-check

fmt:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet $(PKGS)

tidy-check:
	@cp go.mod /tmp/joinery-go.mod.bak; cp go.sum /tmp/joinery-go.sum.bak; \
	$(GO) mod tidy; \
	if ! git diff --quiet -- go.mod go.sum 2>/dev/null; then \
		echo "go.mod/go.sum are not tidy (run go mod tidy):"; git --no-pager diff -- go.mod go.sum | head -40; \
		cp /tmp/joinery-go.mod.bak go.mod; cp /tmp/joinery-go.sum.bak go.sum; exit 1; fi

## chaos: the fault-injection suite on 200000 changes: 20 trials of scenario 1
## (kill -9 of an actor node), 3 of every other (CI: 1-3 trials on 20000).
## About 85 minutes on 2 cores. CHAOS_TRIALS / CHAOS_KILL_TRIALS override.
CHAOS_TRIALS ?= 3
CHAOS_KILL_TRIALS ?= 20
chaos: redis build
	CHAOS_TRIALS=$(CHAOS_TRIALS) CHAOS_KILL_TRIALS=$(CHAOS_KILL_TRIALS) CHAOS_CHANGES=200000 $(GO) test -count=1 -v -timeout 180m ./chaos/

## fuzz: a short run of every fuzz target (FUZZTIME each).
FUZZTIME ?= 10s
fuzz:
	@scripts/fuzz.sh $(FUZZTIME)

## bench: benchmarks (figures, not pass/fail), then their charts: BENCH_PLOTS/bench-{throughput,ratio,latency}.png
## (default /tmp/joinery-bench). See docs/performance.md.
bench:
	mkdir -p /tmp/joinery-bench
	$(GO) run ./cmd/bench -scale $(or $(BENCH_SCALE),small) -rounds $(or $(BENCH_ROUNDS),3) -out $(or $(BENCH_OUT),/tmp/joinery-bench/bench-results.json) $(if $(BENCH_WORKLOADS),-workloads $(BENCH_WORKLOADS))
	$(GO) run ./cmd/benchplot -in $(or $(BENCH_OUT),/tmp/joinery-bench/bench-results.json) -out $(or $(BENCH_PLOTS),/tmp/joinery-bench)
	$(GO) test -run '^$$' -bench . -benchmem $(PKGS)

## bench-capacity: Redis memory per join key (figures, not pass/fail; a few minutes, run it with nice): the users ⋈ domains join through one node on a redis-server, BENCH_CAPACITY_CHANGES (200000) changes, narrow rows and rows with ten unused 24-byte columns; table on stdout, JSON to BENCH_OUT (/tmp/joinery-capacity.json).
.PHONY: bench-capacity
bench-capacity: redis
	$(GO) run ./cmd/benchcapacity -changes $(or $(BENCH_CAPACITY_CHANGES),200000) -out $(or $(BENCH_OUT),/tmp/joinery-capacity.json)

## bench-fleet: the fleet benchmark (figures, not pass/fail): 1-4 joinery nodes at BENCH_FLEET_CPU (0.3) CPU each, input ×BENCH_FLEET_SCALE (3)
## (cgroup v1 quota; needs root), a 3-master Redis Cluster, a kfake Kafka broker process; table on stdout,
## JSON to BENCH_OUT, plot to BENCH_FLEET_PLOT (default /tmp/joinery-bench/scaling.png). See docs/performance.md.
## BENCH_FLEET_FLAGS="-trickle [-source kafka,redis-streams]": the trickle row alone (one node, no CPU quota, one
## update every 10 ms once idle; p50/p99/max event-to-sink, its own table; no plot): docs/performance.md "Latency at a trickle".
## BENCH_FLEET_FLAGS="-cold-start [-source copartitioned,repartitioned]": the cold-start rows (the backlog written first, each
## fleet timed from its start to every entry acknowledged; its own table; no plot): docs/performance.md "Cold start".
BENCH_FLEET_NODES ?= 1,2,3,4
.PHONY: bench-fleet
bench-fleet: redis build
	mkdir -p /tmp/joinery-bench
	$(GO) build -o $(BIN)/benchfleet ./cmd/benchfleet
	$(BIN)/benchfleet -joinery $(BIN)/joinery -nodes $(BENCH_FLEET_NODES) -cpu $(or $(BENCH_FLEET_CPU),0.3) -scale $(or $(BENCH_FLEET_SCALE),3) -out $(or $(BENCH_OUT),/tmp/joinery-bench/fleet.json) -plot $(or $(BENCH_FLEET_PLOT),/tmp/joinery-bench/scaling.png) $(BENCH_FLEET_FLAGS)

## bench-memory: the memory budget's full run (figures, long: run it with nice): TestNodeMemoryBudget with
## BENCH_MEMORY_KEYS (2000000) CDC keys, state in Redis, default job settings, under a BENCH_MEMORY_LIMIT (1GiB)
## memory cgroup (as root; else a GOMEMLIMIT-style soft limit). Prints "N B per live key". See docs/performance.md.
.PHONY: bench-memory
bench-memory: redis
	BENCH_MEMORY_KEYS=$(or $(BENCH_MEMORY_KEYS),2000000) BENCH_MEMORY_LIMIT=$(or $(BENCH_MEMORY_LIMIT),1GiB) GO=$(GO) scripts/bench-memory.sh

## bench-live-keys: bytes per live key (long, run it with nice): TestNodeMemoryLiveKeys with BENCH_LIVE_KEYS
## (1000000) keys all live, state in Redis (no copy of it in the node's heap), no passivation, no budget. Prints
## "N B per live key"; the heap profile goes to BENCH_LIVE_PROFILE (/tmp/livekeys.heap). See docs/performance.md.
.PHONY: bench-live-keys
bench-live-keys: redis
	JOINERY_LIVE_KEYS=$(or $(BENCH_LIVE_KEYS),1000000) JOINERY_LIVE_KEYS_STORE=redis \
	JOINERY_HEAP_PROFILE=$(or $(BENCH_LIVE_PROFILE),/tmp/livekeys.heap) \
	$(GO) test -count=1 -timeout 30m -run 'TestNodeMemoryLiveKeys$$' -v ./node/

## console-screenshots: drive the web console in headless Chromium and rewrite docs/operations/console-*.png.
.PHONY: console-screenshots
console-screenshots: redis
	$(GO) test -count=1 -run 'TestConsole' ./node/ -args -screenshots

clean:
	rm -rf $(BIN)

## chart-check: render the Helm chart with Helm's libraries (default and full values), decode every manifest strictly, lint it, check its values schema and run `node check` on its job file (separate module deploy/chartcheck); then the helm CLI's own lint --strict.
.PHONY: chart-check
chart-check:
	cd deploy/chartcheck && $(GO) test -count=1 ./...
	$(GO) run helm.sh/helm/v3/cmd/helm@v3.22.0 lint --strict deploy/helm/joinery
	$(GO) run helm.sh/helm/v3/cmd/helm@v3.22.0 lint --strict deploy/helm/joinery -f deploy/chartcheck/testdata/full-values.yaml
