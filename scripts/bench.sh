#!/usr/bin/env bash
# Runs the benchmarks of every package in a short run (BENCHTIME, default 100x; the browser
# join and the window's start in Chromium, about a second per op, 3x), with the real keyring and
# headless Chromium, then prints the ratios against their baselines as one table
# (scripts/benchtable.sh). Full output: out/bench.log.
set -uo pipefail
cd "$(dirname "$0")/.."
mkdir -p out
benchtime=${BENCHTIME:-100x}
rc=0
{
	scripts/with-keyring.sh go test -run '^$' -bench . -benchtime "$benchtime" $(go list ./... | grep -v -e '/browser$' -e '/e2e$') || rc=1
	scripts/with-keyring.sh env POPPYDESK_REQUIRE_E2E=1 go test -run '^$' -bench . -benchtime 3x ./browser ./e2e || rc=1
} > out/bench.log 2>&1
grep -E '^(FAIL|panic:|--- FAIL)' out/bench.log && rc=1
scripts/benchtable.sh out/bench.log || rc=1
exit $rc
