#!/usr/bin/env bash
# Runs every fuzz target of the tree for a short fixed time (FUZZTIME, default 3s; go test allows
# one -fuzz target per package invocation, so the targets are listed from the sources and run one
# by one). A failing input is written by go test to the package's testdata/fuzz/FuzzX/ and kept:
# commit it, and it runs as a regression seed in every `go test` from then on. The inputs the
# fuzzer found interesting stay in the Go build cache's fuzz corpus for the next run.
set -uo pipefail
cd "$(dirname "$0")/.."
fuzztime=${FUZZTIME:-3s}
fail=0
t0=$(date +%s)
while IFS=: read -r file _ decl; do
	name=$(sed -E 's/^func (Fuzz[A-Za-z0-9_]*).*/\1/' <<<"$decl")
	pkg=$(dirname "$file")
	ts=$(date +%s)
	if out=$(go test -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" "$pkg" 2>&1); then
		echo "fuzz ok   $pkg $name ($(( $(date +%s)-ts )) s, $(grep -oE 'execs: [0-9]+' <<<"$out" | tail -1))"
	else
		fail=1
		echo "fuzz FAIL $pkg $name"
		grep -vE '^fuzz: elapsed' <<<"$out" | tail -25
	fi
done < <(grep -rn --include='*_test.go' -E '^func Fuzz[A-Za-z0-9_]*\(' . | sort)
new=$(git status --porcelain -- '*/testdata/fuzz/*' 'testdata/fuzz/*' 2>/dev/null)
if [ -n "$new" ]; then
	echo "new failing inputs (commit them with the fix; they then run in every go test):"
	echo "$new"
fi
echo "fuzz: $(( $(date +%s)-t0 )) s"
exit $fail
