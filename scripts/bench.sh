#!/usr/bin/env bash
# Runs Weave's benchmarks and prints the figures beside their targets and
# floors. Figures depend on the machine and its load: run it on a quiet one.
#   scripts/bench.sh              every suite
#   BENCHTIME=3x scripts/bench.sh override each suite's benchtime
#   COUNT=5 scripts/bench.sh      run each suite 5 times and print medians
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(mktemp)
trap 'rm -f "$out"' EXIT

run() { # package, bench regexp, benchtime[, count]
  local bt=${BENCHTIME:-$3} n=${COUNT:-${4:-1}}
  echo "--- go test -bench '$2' -benchtime $bt -count $n $1" >&2
  go test -run '^$' -bench "$2" -benchmem -benchtime "$bt" -count "$n" "$1" | tee -a "$out" | grep -E '^(Benchmark|ok|FAIL)' >&2
}

# metric NAME UNIT: the value of UNIT for benchmark NAME; the median when
# the suite ran more than once (COUNT), as single runs swing on busy machines.
metric() {
  awk -v name="$1" -v unit="$2" '$1 ~ "^"name"(-[0-9]+)?$" { for (i = 3; i < NF; i++) if ($(i+1) == unit) print $i }' "$out" |
    sort -g | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)] }'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a != "" && b > 0) printf "%.2fx", a / b; else print "n/a" }'; }

run ./plans 'Benchmark(Parse|GoldmarkFloor)' 1s 5
run ./plans 'BenchmarkSetDone100000' 1s
run ./cmd/weave 'Benchmark(StartWorkRunbook|RunbookFloor)$' 1x
run ./cmd/weave 'BenchmarkStatusProcess$' 20x
run ./cmd/weave 'BenchmarkFirstTask' 20x
run ./host/supervisor 'Benchmark(PluginColdStart|HookRoundTrip)$' 1s
run ./host/tools 'Benchmark(ToolCallThroughGate|ToolCallDirect)$' 1s
run ./plugins 'Benchmark(BareGRPCUnix|BareGRPCUnixSubprocess|HookRoundTripInProcess)$' 1s
run ./hooks 'BenchmarkPipelineRoundTrip' 1s
run ./host 'BenchmarkModelCall(Direct|ThroughHost)$' 300x 5
run ./bus 'Benchmark(Publish|ChannelFanout)' 1s
run ./bus/jsonrpc 'Benchmark(SendMessage|SendMessageRawClient|BareEcho)$' 1s 5
run ./bus/envelope 'BenchmarkRoundTrip' 1s 5
run ./bus/natsbus 'Benchmark(PublishDeliver|BareNATS)$' 1s

line() { printf '  %-44s %s\n' "$1" "$2"; }
echo
echo "== Plans (target: a 1,000-task plan parsed and counted in under 5 ms)"
for n in 10 1000 100000; do
  line "parse+count, $n tasks" "$(metric "BenchmarkParse/tasks=$n" ns/op) ns/op  $(metric "BenchmarkParse/tasks=$n" MB/s) MB/s  $(metric "BenchmarkParse/tasks=$n" allocs/op) allocs/op"
done
line "stock goldmark block parse, 1000 (floor)" "$(metric BenchmarkGoldmarkFloor ns/op) ns/op"
line "tick one task in 100,000 (no re-render)" "$(metric BenchmarkSetDone100000 ns/op) ns/op"
echo "== Runbook (target: within 2x of the floor per task)"
sw=$(metric BenchmarkStartWorkRunbook ns/task); fl=$(metric BenchmarkRunbookFloor ns/task)
line "weave start-work, 1000 tasks" "$sw ns/task"
line "floor: shell loop + 2 atomic writes" "$fl ns/task   ratio $(ratio "$sw" "$fl")"
line "weave status, process start to exit" "$(metric BenchmarkStatusProcess ns/op) ns"
echo "== Plugins (target: hook round trip within 2x of bare gRPC at p50)"
rt=$(metric BenchmarkHookRoundTrip p50-ns); bare=$(metric BenchmarkBareGRPCUnix p50-ns); sub=$(metric BenchmarkBareGRPCUnixSubprocess p50-ns)
line "plugin cold start to first call" "$(metric BenchmarkPluginColdStart ns/op) ns/op"
ft=$(metric BenchmarkFirstTask/builtins ns/op); fn=$(metric BenchmarkFirstTask/no-builtin-hooks ns/op)
line "one-task start-work, with built-in hooks" "$ft ns   without: $fn ns   built-ins add $(awk -v a="$ft" -v b="$fn" 'BEGIN { printf "%.1f ms", (a - b) / 1e6 }') (target < 100 ms)"
line "hook round trip (subprocess plugin)" "$rt ns p50"
line "floor: bare gRPC over UDS, in process" "$bare ns p50   ratio $(ratio "$rt" "$bare")"
line "floor: bare gRPC over UDS, subprocess" "$sub ns p50   ratio $(ratio "$rt" "$sub")"
line "tool call through gate + hooks" "$(metric BenchmarkToolCallThroughGate ns/op) ns/op   direct $(metric BenchmarkToolCallDirect ns/op) ns/op"
line "pipeline, 1 in-process hook" "$(metric BenchmarkPipelineRoundTrip/hooks=1 ns/op) ns/op"
mh=$(metric BenchmarkModelCallThroughHost ns/op); md=$(metric BenchmarkModelCallDirect ns/op)
line "model call through the host (fake model)" "$mh ns/op   provider alone $md ns/op   host adds $(awk -v a="$mh" -v b="$md" 'BEGIN { printf "%.2f ms", (a - b) / 1e6 }') (target <= 1 ms)"
echo "== Bus (targets: memory within 3x of channels and > 1,000,000 msgs/s; faces within 1.5x of their floor at p50)"
for n in 1 100; do
  p=$(metric "BenchmarkPublish/subs=$n" ns/op); c=$(metric "BenchmarkChannelFanout/subs=$n" ns/op)
  line "memory publish->deliver, $n subscriber(s)" "$p ns/op  $(metric "BenchmarkPublish/subs=$n" msgs/s) msgs/s   channels $c ns/op   ratio $(ratio "$p" "$c")"
done
# The faces are measured from a client writing and reading raw frames, as
# their floors are; the Go clients' own figures are printed beside them.
sm=$(metric BenchmarkSendMessageRawClient p50-ns); gc=$(metric BenchmarkSendMessage p50-ns); echo_=$(metric BenchmarkBareEcho p50-ns)
line "JSON-RPC sendMessage round trip" "$sm ns p50 (Go client $gc)   bare WebSocket echo $echo_   ratio $(ratio "$sm" "$echo_")"
ev=$(metric BenchmarkRoundTrip/envelope-uds p50-ns); raw=$(metric BenchmarkRoundTrip/envelope-uds-raw-client p50-ns); be=$(metric BenchmarkRoundTrip/bare-echo-uds p50-ns)
line "v1 envelope round trip over UDS" "$raw ns p50 (Go client $ev)   bare echo $be   ratio $(ratio "$raw" "$be")"
np=$(metric BenchmarkPublishDeliver ns/op); nb=$(metric BenchmarkBareNATS ns/op)
line "nats backend publish->deliver" "$np ns/op   bare nats.go $nb   ratio $(ratio "$np" "$nb")"
