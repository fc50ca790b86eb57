#!/usr/bin/env bash
# Runs every Fuzz* target of the module for $1 (default 10s) each.
#
# Go's fuzzer sometimes ends a short run with a bare "context deadline
# exceeded" failure when -fuzztime elapses while a worker is busy (no
# failing input is written). Such a run is tried once more; a run that found
# a failing input, or fails twice, fails the script.
set -euo pipefail
t=${1:-10s}
fuzz() {
	local out
	if out=$(go test -run '^$' -fuzz "^$2\$" -fuzztime "$t" "$1" 2>&1); then
		echo "$out"
		return 0
	fi
	echo "$out"
	if grep -q 'Failing input written' <<<"$out" || ! grep -q 'context deadline exceeded' <<<"$out"; then
		return 1
	fi
	echo "-- $2: the fuzzer's deadline race (no failing input); running it once more"
	go test -run '^$' -fuzz "^$2\$" -fuzztime "$t" "$1"
}
for pkg in $(go list ./...); do
	dir=$(go list -f '{{.Dir}}' "$pkg")
	for f in $(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go 2>/dev/null | awk '{print $2}'); do
		echo "== $pkg $f"
		fuzz "$pkg" "$f"
	done
done
