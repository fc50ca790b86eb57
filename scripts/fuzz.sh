#!/usr/bin/env bash
# Runs every Fuzz* target of the module for $1 (default 10s) each.
set -euo pipefail
t=${1:-10s}
for pkg in $(go list ./...); do
	dir=$(go list -f '{{.Dir}}' "$pkg")
	for f in $(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go 2>/dev/null | awk '{print $2}'); do
		echo "== $pkg $f"
		go test -run '^$' -fuzz "^$f\$" -fuzztime "$t" "$pkg"
	done
done
