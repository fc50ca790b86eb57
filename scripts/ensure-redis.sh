#!/usr/bin/env bash
# Makes sure redis-server is on PATH for the tests: installs Debian's package
# when it is missing and we are root on Debian; otherwise says how to.
set -euo pipefail
if command -v redis-server >/dev/null 2>&1; then exit 0; fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
	echo "redis-server missing: installing Debian's redis-server package"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq && apt-get install -y -qq redis-server >/dev/null
	# The package starts a system service; the tests start their own servers.
	(service redis-server stop || systemctl stop redis-server || true) >/dev/null 2>&1
	command -v redis-server >/dev/null && exit 0
fi
echo "redis-server is required by the tests and is not installed." >&2
echo "Install it (Debian/Ubuntu: sudo apt-get install redis-server; macOS: brew install redis) and run make test again." >&2
exit 1
