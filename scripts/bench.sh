#!/usr/bin/env bash
# Runs the benchmarks of every package (BENCHTIME per benchmark, default 2s, so that each ratio
# is the median of several rounds of many interleaved iterations: internal/benchratio; the
# browser join and the window's start in Chromium, about a second per op, E2E_BENCHTIME, default
# 10x), with the real keyring and headless Chromium, then prints the ratios against their
# baselines as one table (scripts/benchtable.sh), which marks the noisy rows. Full output:
# out/bench.log. BENCH_SHORT=1 (make test) runs each benchmark briefly (20x, 1x in Chromium)
# with -short, which leaves out the ten-times long history: it checks that every benchmark
# runs, not its figures. POPPYDESK_REQUIRE_E2E=1 everywhere: a benchmark whose prerequisite is
# missing (GitHub's description, Chromium) fails instead of leaving its row out of the table.
set -uo pipefail
cd "$(dirname "$0")/.."
mkdir -p out
benchtime=${BENCHTIME:-2s}
e2etime=${E2E_BENCHTIME:-10x}
short=()
if [ "${BENCH_SHORT:-}" = 1 ]; then
	benchtime=${BENCHTIME:-20x}
	e2etime=${E2E_BENCHTIME:-1x}
	short=(-short)
fi
rc=0
{
	scripts/with-keyring.sh env POPPYDESK_REQUIRE_E2E=1 go test "${short[@]}" -run '^$' -bench . -benchtime "$benchtime" -timeout 60m $(go list ./... | grep -v -e '/browser$' -e '/e2e$') || rc=1
	scripts/with-keyring.sh env POPPYDESK_REQUIRE_E2E=1 go test "${short[@]}" -run '^$' -bench . -benchtime "$e2etime" -timeout 60m ./browser ./e2e || rc=1
} > out/bench.log 2>&1
grep -E '^(FAIL|panic:|--- FAIL)' out/bench.log && rc=1
scripts/benchtable.sh out/bench.log || rc=1
exit $rc
