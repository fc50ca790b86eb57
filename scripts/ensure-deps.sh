#!/usr/bin/env bash
# Makes sure the programs the tests start are on PATH: redis-server (Redis
# tests), redis-cli (redis-tools: creating the Redis Cluster tests' clusters),
# kcat (a real Kafka client for the Kafka end-to-end test), ip (iproute2: the
# chaos partition scenario's network namespaces) and chromium (the web
# console tests drive it headless).
# Installs Debian's packages when they are missing and we are root on Debian;
# otherwise says how to install them.
set -euo pipefail
missing=()
command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
command -v redis-cli >/dev/null 2>&1 || missing+=(redis-tools)
command -v kcat >/dev/null 2>&1 || missing+=(kcat)
command -v ip >/dev/null 2>&1 || missing+=(iproute2)
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
	echo "installing Debian packages: ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq && apt-get install -y -qq "${missing[@]}" >/dev/null
	# The redis-server package starts a system service; the tests start their own servers.
	(service redis-server stop || systemctl stop redis-server || true) >/dev/null 2>&1
fi
command -v redis-server >/dev/null 2>&1 || {
	echo "redis-server is required by the tests and is not installed." >&2
	echo "Install it (Debian/Ubuntu: sudo apt-get install redis-server; macOS: brew install redis) and run make test again." >&2
	exit 1
}
command -v redis-cli >/dev/null 2>&1 || {
	echo "redis-cli is required by the Redis Cluster tests and is not installed." >&2
	echo "Install it (Debian/Ubuntu: sudo apt-get install redis-tools; macOS: brew install redis) and run make test again." >&2
	exit 1
}
command -v kcat >/dev/null 2>&1 || echo "note: kcat is not installed (Debian: apt-get install kcat); the Kafka end-to-end test with a real client will be skipped" >&2
command -v chromium >/dev/null 2>&1 || echo "note: chromium is not installed (Debian: apt-get install chromium); the web console tests (node TestConsole*) will be skipped (they fail when CI=true)" >&2
command -v ip >/dev/null 2>&1 || echo "note: ip (iproute2) is not installed (Debian: apt-get install iproute2); the chaos partition scenario will fail" >&2
exit 0
