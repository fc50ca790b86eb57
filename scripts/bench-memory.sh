#!/usr/bin/env bash
# bench-memory.sh: the memory budget's full run. TestNodeMemoryBudget
# with BENCH_MEMORY_KEYS (2,000,000) distinct CDC keys, state in a redis-server
# started here, default job settings, under a BENCH_MEMORY_LIMIT (1GiB) memory
# limit. As root with cgroup v1 or v2 mounted, the test runs in a memory cgroup
# of that limit made under this shell's own cgroup (the kernel enforces it,
# gctune reads it as the node binary does); otherwise GOMEMLIMIT-style (the
# test sets 80% of the limit as its soft limit and checks its RSS). The
# redis-server runs outside the cgroup. Figures, not pass/fail beyond the
# test's own checks. Run it with nice: it is long.
set -euo pipefail
keys=${BENCH_MEMORY_KEYS:-2000000}
limit=${BENCH_MEMORY_LIMIT:-1GiB}
go=${GO:-go}
case $limit in
*GiB) bytes=$(( ${limit%GiB} << 30 ));;
*MiB) bytes=$(( ${limit%MiB} << 20 ));;
*) bytes=$limit;;
esac

work=$(mktemp -d /tmp/joinery-bench-memory.XXXXXX)
cg=""
redis_pid=""
cleanup() {
	[ -n "$redis_pid" ] && kill "$redis_pid" 2>/dev/null || true
	if [ -n "$cg" ] && [ -d "$cg" ]; then rmdir "$cg" 2>/dev/null || true; fi
	rm -rf "$work"
}
trap cleanup EXIT

$go test -c -o "$work/node.test" ./node/

port=$(( 20000 + RANDOM % 20000 ))
redis-server --port "$port" --bind 127.0.0.1 --dir "$work" --save "" --appendonly no \
	--protected-mode no --daemonize no >"$work/redis.log" 2>&1 &
redis_pid=$!
for _ in $(seq 50); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done

# A memory cgroup under this shell's own (v1: the memory controller's path;
# v2: the unified path), if it can be made.
self_v1=$(awk -F: '$2 ~ /(^|,)memory(,|$)/ {print $3}' /proc/self/cgroup)
self_v2=$(awk -F: '$1 == "0" {print $3}' /proc/self/cgroup)
mode="GOMEMLIMIT (no memory cgroup could be made)"
if [ -d /sys/fs/cgroup/memory ] && [ -n "$self_v1" ] && mkdir "/sys/fs/cgroup/memory${self_v1%/}/joinery-bench-$$" 2>/dev/null; then
	cg="/sys/fs/cgroup/memory${self_v1%/}/joinery-bench-$$"
	echo "$bytes" >"$cg/memory.limit_in_bytes"
	[ -f "$cg/memory.memsw.limit_in_bytes" ] && echo "$bytes" >"$cg/memory.memsw.limit_in_bytes" 2>/dev/null || true
	mode="cgroup v1 memory.limit_in_bytes=$bytes ($cg)"
elif [ -f /sys/fs/cgroup/cgroup.controllers ] && mkdir "/sys/fs/cgroup${self_v2%/}/joinery-bench-$$" 2>/dev/null; then
	cg="/sys/fs/cgroup${self_v2%/}/joinery-bench-$$"
	echo "$bytes" >"$cg/memory.max"
	mode="cgroup v2 memory.max=$bytes ($cg)"
fi
echo "bench-memory: $keys keys, limit $limit: $mode; redis-server on 127.0.0.1:$port outside it"

export JOINERY_BUDGET_KEYS=$keys JOINERY_REDIS_ADDR=127.0.0.1:$port
timeout=$(( 30 + keys / 20000 ))m
rc=0
if [ -n "$cg" ]; then
	JOINERY_BUDGET_LIMIT=cgroup sh -c 'echo $$ >"$1/cgroup.procs" && shift && exec "$@"' sh "$cg" \
		"$work/node.test" -test.run '^TestNodeMemoryBudget$' -test.v -test.timeout "$timeout" || rc=$?
	if [ -f "$cg/memory.max_usage_in_bytes" ]; then
		echo "cgroup: max usage $(( $(cat "$cg/memory.max_usage_in_bytes") >> 20 )) MiB (RSS + page cache) of $(( bytes >> 20 )) MiB, limit hits (failcnt) $(cat "$cg/memory.failcnt"), $(grep oom_kill "$cg/memory.oom_control" || echo 'oom_kill ?')"
	elif [ -f "$cg/memory.peak" ]; then
		echo "cgroup: peak $(( $(cat "$cg/memory.peak") >> 20 )) MiB of $(( bytes >> 20 )) MiB; $(tr '\n' ' ' <"$cg/memory.events")"
	fi
else
	JOINERY_BUDGET_LIMIT=$limit "$work/node.test" -test.run '^TestNodeMemoryBudget$' -test.v -test.timeout "$timeout" || rc=$?
fi
echo "redis-server: $(redis-cli -p "$port" info memory | grep -E '^used_memory(_human)?:' | tr -d '\r' | tr '\n' ' ') dbsize $(redis-cli -p "$port" dbsize)"
exit $rc
