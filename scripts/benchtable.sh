#!/usr/bin/env bash
# Reads `go test -bench` output (stdin or files) and prints one table of the benchmarks that
# compare against a baseline in the same run (internal/benchratio: names SUBJECT/vs=BASELINE,
# metric x-baseline) or against a floor (metric x-floor: the signed request against a plain
# request plus one bare signature), and the ratios a benchmark reports itself (metrics named
# *-ratio, against a baseline its doc names, such as an empty state): package, benchmark, ratio
# (internal/benchratio: the median of its rounds), baseline, which time it compares (cpu: the
# process's CPU time, wall: wall time), both times where known, and why a row is noisy: rounds
# that differ by more than 20 % (round-spread), or a wall-time row whose sides wait; a row that
# leaves the garbage collector out (benchratio.RunCPUCollected) says so, with what each side
# allocates.
set -euo pipefail
awk '
/^pkg: / { pkg = $2; sub(/^github.com\/poppydesk\/poppydesk\//, "", pkg) }
/^Benchmark/ && / x-baseline/ {
	name = $1; sub(/-[0-9]+$/, "", name)
	base = name; sub(/.*\/vs=/, "", base); sub(/\/vs=[^\/]*$/, "", name)
	ratio = ""; ns = ""; bns = ""; cns = ""; cbns = ""; spread = ""; gcx = ""; bop = ""; bbop = ""
	for (i = 3; i < NF; i++) {
		if ($(i+1) == "x-baseline") ratio = $i
		if ($(i+1) == "ns/op") ns = $i
		if ($(i+1) == "baseline-ns/op") bns = $i
		if ($(i+1) == "cpu-ns/op") cns = $i
		if ($(i+1) == "baseline-cpu-ns/op") cbns = $i
		if ($(i+1) == "round-spread") spread = $i
		if ($(i+1) == "gc-excluded") gcx = $i
		if ($(i+1) == "alloc-B/op") bop = $i
		if ($(i+1) == "baseline-alloc-B/op") bbop = $i
	}
	clock = "wall"
	if (cns != "") { clock = "cpu"; ns = cns; bns = cbns }
	note = ""
	if (clock == "wall") note = "wall time: waits (disk, browser, another process) count"
	if (gcx != "") note = sprintf("collector left out; allocates %.0f KB/op, baseline %.0f", bop / 1000, bbop / 1000)
	if (spread != "" && spread + 0 > 0.2) note = sprintf("noisy: its rounds differ by %d%% (load during the run)", spread * 100)
	rows[++n] = sprintf("%-22s %-58s %9sx  %-26s %-4s %12s %12s  %s", pkg, name, ratio, base, clock, ns, bns, note)
}
/^Benchmark/ && / x-floor/ {
	name = $1; sub(/-[0-9]+$/, "", name)
	ratio = ""; ns = ""; pns = ""; sns = ""
	for (i = 3; i < NF; i++) {
		if ($(i+1) == "x-floor") ratio = $i
		if ($(i+1) == "engine-ns/op") ns = $i
		if ($(i+1) == "plain-ns/op") pns = $i
		if ($(i+1) == "bare-sig-ns/op") sns = $i
	}
	rows[++n] = sprintf("%-22s %-58s %9sx  %-26s %-4s %12s %12s", pkg, name, ratio, "plain + bare signature(s)", "wall", ns, pns + sns)
}
/^Benchmark/ && /-ratio([ \t]|$)/ {
	name = $1; sub(/-[0-9]+$/, "", name)
	for (i = 3; i < NF; i++) {
		if ($(i+1) ~ /-ratio$/) rows[++n] = sprintf("%-22s %-58s %9sx  %-26s %-4s %12s %12s  %s", pkg, name "/" $(i+1), $i, "its doc (same run)", "wall", "", "", "one figure per run: repeat runs to see its spread")
	}
}
END {
	printf "%-22s %-58s %10s  %-26s %-4s %12s %12s  %s\n", "package", "benchmark", "ratio", "baseline", "time", "ns/op", "baseline ns/op", "noisy? why"
	for (i = 1; i <= n; i++) print rows[i]
	if (n == 0) { print "no benchmark with a baseline ratio (x-baseline) in the input"; exit 1 }
}' "$@"
