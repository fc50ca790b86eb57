#!/usr/bin/env bash
# A three-node Joinery fleet on this machine, state in a local Redis.
#
#   deploy/local/fleet.sh start    build bin/joinery + bin/joinctl, start Redis
#                                  (127.0.0.1:6390, AOF) and nodes 1-3, wait until
#                                  every node's /readyz answers 200
#   deploy/local/fleet.sh feed     XADD examples/users-domains/changes.jsonl to
#                                  the Redis Stream "cdc" node 1 reads
#   deploy/local/fleet.sh status   pids and /readyz of each process
#   deploy/local/fleet.sh stop     SIGTERM the nodes, wait for their drain, then
#                                  stop Redis (it writes its AOF on the way out)
#
# Node i: gossip 127.0.0.1:794(5+i), remote 127.0.0.1:80(89+i), admin
# 127.0.0.1:808i; job file deploy/local/node<i>.yaml, environment node<i>.env.
# State, pids and logs go to $JOINERY_FLEET_DIR (default /tmp/joinery-fleet):
# redis/ (data + AOF), redis.log, node<i>.pid, node<i>.log (the node's log),
# node1.changelog (the join's changelog, node 1's stdout sink).
#
# Needs redis-server and redis-cli on PATH (Debian/Ubuntu: apt-get install
# redis-server; macOS: brew install redis), Go, and curl.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
state=${JOINERY_FLEET_DIR:-/tmp/joinery-fleet}
redis_port=6390
nodes=(1 2 3)
drain_wait=45 # seconds a node gets after SIGTERM (it drains for up to 30s)

die() { echo "fleet: $*" >&2; exit 1; }
alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }
admin_addr() { sed -n 's/^JOINERY_ADMIN_ADDR=//p' "$here/node$1.env"; }
rcli() { redis-cli -h 127.0.0.1 -p "$redis_port" "$@"; }

need() {
	for c in "$@"; do
		command -v "$c" >/dev/null 2>&1 || die "$c not found on PATH (redis: apt-get install redis-server, or brew install redis)"
	done
}

build() {
	need go
	echo "building bin/joinery and bin/joinctl"
	(cd "$root" && go build -o bin/joinery ./cmd/node && go build -o bin/joinctl ./cmd/joinctl)
}

start_redis() {
	if alive "$state/redis.pid"; then
		echo "redis already running (pid $(cat "$state/redis.pid"))"
		return
	fi
	mkdir -p "$state/redis"
	redis-server --bind 127.0.0.1 --port "$redis_port" --dir "$state/redis" \
		--appendonly yes --appendfsync everysec --save "" \
		--daemonize yes --pidfile "$state/redis.pid" --logfile "$state/redis.log"
	for _ in $(seq 50); do
		rcli ping >/dev/null 2>&1 && { echo "redis  127.0.0.1:$redis_port pid $(cat "$state/redis.pid") (AOF in $state/redis)"; return; }
		sleep 0.1
	done
	die "redis did not answer on 127.0.0.1:$redis_port; see $state/redis.log"
}

start_node() {
	local i=$1 pidf="$state/node$1.pid"
	if alive "$pidf"; then
		echo "node$i already running (pid $(cat "$pidf"))"
		return
	fi
	# The per-node JOINERY_* overrides, exported for this node only.
	(
		set -a
		# shellcheck disable=SC1090
		. "$here/node$i.env"
		set +a
		"$root/bin/joinery" check --config "$here/node$i.yaml" >/dev/null ||
			die "node$i: job file rejected"
		exec "$root/bin/joinery" run --config "$here/node$i.yaml" \
			>>"$state/node$i.changelog" 2>>"$state/node$i.log" </dev/null
	) &
	echo $! >"$pidf"
	echo "node$i  pid $! admin http://$(admin_addr "$i") log $state/node$i.log"
}

ready() { curl -fsS -m 2 -o /dev/null "http://$(admin_addr "$1")/readyz" 2>/dev/null; }

cmd_start() {
	need redis-server redis-cli curl
	build
	mkdir -p "$state"
	start_redis
	for i in "${nodes[@]}"; do start_node "$i"; done
	local deadline=$((SECONDS + 60))
	for i in "${nodes[@]}"; do
		until ready "$i"; do
			alive "$state/node$i.pid" || die "node$i exited; see $state/node$i.log"
			[ $SECONDS -lt $deadline ] || die "node$i not ready after 60s; see $state/node$i.log"
			sleep 0.5
		done
	done
	echo "fleet ready: bin/joinctl --server http://$(admin_addr 1) members"
}

cmd_feed() {
	need redis-cli
	local file="$root/examples/users-domains/changes.jsonl" n=0 line
	while IFS= read -r line || [ -n "$line" ]; do
		[ -n "$line" ] || continue
		rcli XADD cdc '*' value "$line" >/dev/null
		n=$((n + 1))
	done <"$file"
	echo "fed $n records to stream cdc ($(rcli XLEN cdc) entries now)"
}

stop_pid() { # name pidfile timeout
	local name=$1 pidf=$2 wait=$3 pid
	alive "$pidf" || { rm -f "$pidf"; echo "$name not running"; return 0; }
	pid=$(cat "$pidf")
	kill -TERM "$pid"
	local deadline=$((SECONDS + wait))
	while kill -0 "$pid" 2>/dev/null; do
		if [ $SECONDS -ge $deadline ]; then
			echo "$name (pid $pid) still running after ${wait}s: SIGKILL" >&2
			kill -KILL "$pid" 2>/dev/null || true
			break
		fi
		sleep 0.2
	done
	rm -f "$pidf"
	echo "$name stopped (pid $pid)"
}

cmd_stop() {
	# Nodes first, in parallel (each flushes its state to Redis while
	# draining), then Redis.
	local pids=()
	for i in "${nodes[@]}"; do
		stop_pid "node$i" "$state/node$i.pid" "$drain_wait" &
		pids+=($!)
	done
	wait "${pids[@]}"
	stop_pid redis "$state/redis.pid" 30
}

cmd_status() {
	local rc=0 i
	if alive "$state/redis.pid"; then
		echo "redis  pid $(cat "$state/redis.pid")  127.0.0.1:$redis_port  $(rcli ping 2>&1)"
	else
		echo "redis  not running"; rc=1
	fi
	for i in "${nodes[@]}"; do
		if alive "$state/node$i.pid"; then
			local code
			code=$(curl -s -m 2 -o /dev/null -w '%{http_code}' "http://$(admin_addr "$i")/readyz" || true)
			echo "node$i  pid $(cat "$state/node$i.pid")  http://$(admin_addr "$i")/readyz -> ${code:-no answer}"
			[ "$code" = 200 ] || rc=1
		else
			echo "node$i  not running"; rc=1
		fi
	done
	return $rc
}

case "${1:-}" in
start) cmd_start ;;
stop) cmd_stop ;;
status) cmd_status ;;
feed) cmd_feed ;;
*) echo "usage: $0 start|feed|status|stop   (state in \$JOINERY_FLEET_DIR, default /tmp/joinery-fleet)" >&2; exit 2 ;;
esac
