#!/usr/bin/env bash
# Runs Weave's benchmarks and prints the figures beside their targets.
#   scripts/bench.sh            all suites
#   BENCHTIME=3x scripts/bench.sh
set -euo pipefail
cd "$(dirname "$0")/.."
benchtime=${BENCHTIME:-}
out=$(mktemp)
trap 'rm -f "$out"' EXIT

run() { # package, bench regexp, benchtime
  local bt=${benchtime:-$3}
  echo "--- go test -bench '$2' -benchtime $bt $1" >&2
  go test -run '^$' -bench "$2" -benchmem -benchtime "$bt" "$1" | tee -a "$out" | grep -E '^(Benchmark|ok|FAIL)' >&2
}

# metric NAME UNIT: the value of UNIT on the first line of benchmark NAME.
metric() {
  awk -v name="$1" -v unit="$2" '$1 ~ "^"name"(-[0-9]+)?$" { for (i = 3; i < NF; i++) if ($(i+1) == unit) { print $i; exit } }' "$out"
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }'; }

run ./plans 'Benchmark(Parse|SetDone)' 1s
run ./cmd/weave 'Benchmark(StartWorkRunbook|RunbookFloor)$' 1x
run ./cmd/weave 'BenchmarkStatusProcess$' 20x
for pkg in ./bus/... ./plugins/... ./host/... ./hooks/...; do
  if go list "$pkg" >/dev/null 2>&1 && grep -rqs '^func Benchmark' ${pkg%/...}; then
    run "$pkg" . 1s
  fi
done

echo
echo "== Plans (target: 1,000-task plan parsed and counted in under 5 ms)"
for n in 10 1000 100000; do
  printf '  parse+count %6s tasks: %12s ns/op  %10s MB/s  %8s allocs/op\n' "$n" \
    "$(metric "BenchmarkParse/tasks=$n" ns/op)" "$(metric "BenchmarkParse/tasks=$n" MB/s)" "$(metric "BenchmarkParse/tasks=$n" allocs/op)"
done
printf '  tick one task in 100,000: %s ns/op\n' "$(metric BenchmarkSetDone100000 ns/op)"
echo "== Runbook (target: within 2x of the floor per task)"
sw=$(metric BenchmarkStartWorkRunbook ns/task); fl=$(metric BenchmarkRunbookFloor ns/task)
printf '  weave start-work: %s ns/task   floor: %s ns/task   ratio: %s\n' "$sw" "$fl" "$(ratio "$sw" "$fl")"
echo "== weave status, process start to exit: $(metric BenchmarkStatusProcess ns/op) ns"
