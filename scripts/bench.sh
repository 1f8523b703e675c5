#!/usr/bin/env bash
# Runs Weave's benchmarks and prints each figure beside its floor. A figure
# and its floor run in the same loop, one after the other (A, B, A, B...),
# so that both see the same machine; what is printed is the median of each,
# and the median of the pair ratios A/B, which holds up on a loaded machine
# where absolute times do not. The load average is printed first: read the
# absolute figures against it.
#   scripts/bench.sh                  every figure, 3 pairs each
#   PAIRS=5 scripts/bench.sh          more pairs
#   TASKS=100,1000 scripts/bench.sh   runbook sizes (default 100,300,1000,3000)
#   PLANS=1000 scripts/bench.sh       plans for `weave status` (default 1000)
#   SLEEP=32x8 LAND=10000x20 scripts/bench.sh
#                                     workers: sleep-1 tasks x workers; files x tasks landed
#   REMOTE=64x4 scripts/bench.sh      remote workers: sleep-1 tasks x slots of each of the 2 worker processes
#   REMOTE_DIRS="/mnt/ext4 /dev/shm" scripts/bench.sh
#                                     the remote run again with its directories on each of these
#                                     file systems (its figures depend on what making a file costs)
#   ONLY=runbook scripts/bench.sh     one group: plans runbook hands remote status plugins sandbox model bus mcp
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
PAIRS=${PAIRS:-3}
export WEAVE_BENCH_TASKS=${TASKS:-100,300,1000,3000}
export WEAVE_BENCH_PLANS=${PLANS:-1000}
export WEAVE_BENCH_SLEEP=${SLEEP:-32x8}
export WEAVE_BENCH_LAND=${LAND:-10000x20}
export WEAVE_BENCH_REMOTE=${REMOTE:-64x4}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
log="$tmp/bench.log"

# weave is built once for every run that starts it as a process.
go build -o "$tmp/weave" ./cmd/weave
export WEAVE_BENCH_BIN="$tmp/weave"

# testbin PACKAGE: the package's test binary, built once.
testbin() {
  local b="$tmp/$(printf '%s' "$1" | tr -c 'a-zA-Z0-9' _).test"
  [ -x "$b" ] || go test -c -o "$b" "$1"
  printf '%s' "$b"
}

# bench1 PACKAGE REGEXP BENCHTIME UNIT...: run one benchmark once, from its
# package directory, and print its value of each UNIT, one per line.
bench1() {
  local b res
  b=$(testbin "$1")
  res=$(cd "$root/$1" && "$b" -test.run '^$' -test.bench "$2" -test.benchmem -test.benchtime "$3" 2>&1) ||
    { printf 'benchmark %s in %s failed:\n%s\n' "$2" "$1" "$(printf '%s\n' "$res" | tail -n 20)" >&2; exit 1; }
  printf '%s\n' "$res" >>"$log"
  shift 3
  local unit
  for unit in "$@"; do
    printf '%s\n' "$res" | awk -v unit="$unit" '/^Benchmark/ { for (i = 3; i < NF; i++) if ($(i+1) == unit) v = $i } END { print v }'
  done
}

# fromlog BENCH UNIT: the median of UNIT over every run of BENCH (a
# benchmark name, no regexp) logged so far.
fromlog() {
  awk -v name="$1" -v unit="$2" 'index($1, name) == 1 { for (i = 3; i < NF; i++) if ($(i+1) == unit) print $i }' "$log" | median
}

median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)] }'; }

# pair LABEL UNIT PKG_A BENCH_A PKG_B BENCH_B BENCHTIME [UNIT2]: run A then
# B, PAIRS times, and print the medians and the median of the ratios A/B
# (for UNIT2 too, from the same runs, when given). The values are kept in
# $pa (median of A) and $pr (median ratio) for the caller.
pair() {
  local as="" bs="" rs="" a b i a2 b2 rs2="" v
  for ((i = 1; i <= PAIRS; i++)); do
    v=$(bench1 "$3" "$4" "$7" "$2" ${8:+"$8"}); a=$(sed -n 1p <<<"$v"); a2=$(sed -n 2p <<<"$v")
    v=$(bench1 "$5" "$6" "$7" "$2" ${8:+"$8"}); b=$(sed -n 1p <<<"$v"); b2=$(sed -n 2p <<<"$v")
    as+=" $a"; bs+=" $b"
    rs+=" $(awk -v a="$a" -v b="$b" 'BEGIN { if (a != "" && b > 0) printf "%.4f", a / b }')"
    rs2+=" $(awk -v a="$a2" -v b="$b2" 'BEGIN { if (a != "" && b > 0) printf "%.4f", a / b }')"
  done
  pa=$(echo "$as" | median); pb=$(echo "$bs" | median); pr=$(echo "$rs" | median)
  printf '  %-46s %14s %s   floor %14s   ratio %sx (median of %d pairs)' "$1" "$pa" "$2" "$pb" "$(printf '%.2f' "${pr:-0}")" "$PAIRS"
  if [ -n "${8:-}" ]; then printf '   %s ratio %sx' "$8" "$(printf '%.2f' "$(echo "$rs2" | median)")"; fi
  echo
}

# single LABEL UNIT PKG BENCH BENCHTIME: a figure without a floor, median of
# PAIRS runs.
single() {
  local vs="" i
  for ((i = 1; i <= PAIRS; i++)); do vs+=" $(bench1 "$3" "$4" "$5" "$2")"; done
  printf '  %-46s %14s %s (median of %d)\n' "$1" "$(echo "$vs" | median)" "$2" "$PAIRS"
}

want() { [ -z "${ONLY:-}" ] || [ "$ONLY" = "$1" ]; }

echo "load average: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || uptime) on $(getconf _NPROCESSORS_ONLN) cores"

if want plans; then
  echo "== Plans (target: a 1,000-task plan parsed and counted in under 5 ms; tick in 100,000 tasks < 5 ms)"
  pair "parse+count 1,000 tasks vs stock goldmark" ns/op ./plans 'BenchmarkParse$/^tasks=1000$' ./plans 'BenchmarkGoldmarkFloor$' 1s
  pair "tick one task in 100,000 vs pwrite+fsync" ns/op ./plans 'BenchmarkSetDoneIn100000$' ./plans 'BenchmarkTickFloor100000$' 1s
  single "one byte by rewrite+rename of 100,000 (old way)" ns/op ./plans 'BenchmarkTickRewrite100000$' 1s
  single "tick one task in 100,000 (file changed: re-parse)" ns/op ./plans 'BenchmarkSetDone100000$' 1s
fi

if want runbook; then
  echo "== Runbook: weave start-work on \`true\` blocks vs one process doing the same durable work"
  echo "   (target: <= 1.5x the floor at 1,000 tasks; per-task cost at 3,000 within 1.2x of 300)"
  declare -A per
  for n in ${WEAVE_BENCH_TASKS//,/ }; do
    pair "start-work, $n tasks (per task)" ns/task ./cmd/weave "BenchmarkStartWorkRunbook\$/^tasks=$n\$" ./cmd/weave "BenchmarkRunbookFloor\$/^tasks=$n\$" 1x cpu-ns/task
    per[$n]=$pa
  done
  if [ -n "${per[300]:-}" ] && [ -n "${per[3000]:-}" ]; then
    printf '  %-46s %s\n' "per-task cost, 3,000 vs 300 tasks" "$(awk -v a="${per[3000]}" -v b="${per[300]}" 'BEGIN { printf "%.2fx", a / b }')"
  fi
  echo "   (target: built-in hooks add <= 10% to a 300-task run)"
  pair "start-work 300 tasks, built-ins vs none" ns/task ./cmd/weave 'BenchmarkRunbookHooks$/^builtins$' ./cmd/weave 'BenchmarkRunbookHooks$/^no-builtin-hooks$' 1x cpu-ns/task
  pair "one-task start-work, built-ins vs none" ns/op ./cmd/weave 'BenchmarkFirstTask$/^builtins$' ./cmd/weave 'BenchmarkFirstTask$/^no-builtin-hooks$' 5x
fi

if want hands; then
  sleep_tasks=${WEAVE_BENCH_SLEEP%x*} sleep_workers=${WEAVE_BENCH_SLEEP#*x}
  land_files=${WEAVE_BENCH_LAND%x*} land_tasks=${WEAVE_BENCH_LAND#*x}
  ideal=$(( (sleep_tasks + sleep_workers - 1) / sleep_workers ))
  echo "== Workers: weave start-work --workers N --infer-deps, each task in a worktree, landed on weave/<plan>"
  echo "   (target: $sleep_tasks sleep-1 tasks on $sleep_workers workers within 1.3x of the ideal $ideal s; the floor is that"
  echo "   pool with one git commit and one fsynced tick per task, landed one at a time)"
  pair "$sleep_tasks independent sleep-1 tasks, $sleep_workers workers (CLI)" s/run ./cmd/weave 'BenchmarkStartWorkWorkers$' ./cmd/weave 'BenchmarkWorkersFloor$' 1x
  printf '  %-46s %s s   ideal %s s   ratio %sx\n' "the same run vs the ideal" "$pa" "$ideal" "$(awk -v a="$pa" -v b="$ideal" 'BEGIN { printf "%.2f", a / b }')"
  echo "   (target: within 3x of git worktree add + commit + rebase by hand in a shell, 2 tasks at a time)"
  pair "per-task worktree+commit+land, $land_files files (CLI)" ns/task ./cmd/weave 'BenchmarkLandPerTask$' ./cmd/weave 'BenchmarkLandByHand$' 1x cpu-ns/task
  printf '  %-46s %s ms per task (%s tasks)\n' "per-task cost of weave, wall" "$(awk -v a="$pa" 'BEGIN { printf "%.1f", a / 1e6 }')" "$land_tasks"
  echo "   (target: --workers 1 keeps the runbook figure: <= 1.5x the floor at 1,000 tasks)"
  WEAVE_BENCH_TASKS=1000 pair "start-work --workers 1, 1000 tasks (per task)" ns/task ./cmd/weave 'BenchmarkStartWorkRunbookWorkers1$/^tasks=1000$' ./cmd/weave 'BenchmarkRunbookFloor$/^tasks=1000$' 1x cpu-ns/task
fi

if want remote; then
  remote_tasks=${WEAVE_BENCH_REMOTE%x*} remote_slots=${WEAVE_BENCH_REMOTE#*x}
  remote_workers=$((2 * remote_slots))
  ideal=$(( (remote_tasks + remote_workers - 1) / remote_workers ))
  echo "== Remote workers: weave start-work --workers $remote_workers --bus nats://..., every task run by one of 2 \`weave worker\` processes of $remote_slots slots"
  echo "   beside an embedded nats-server (target: $remote_tasks sleep-1 tasks within 1.3x of the ideal $ideal s; the floor is that pool"
  echo "   with one git commit and one fsynced tick per task, landed one at a time, as for the local workers)"
  pair "$remote_tasks sleep-1 tasks, 2x$remote_slots remote slots (CLI)" s/run ./cmd/weave 'BenchmarkStartWorkRemote$' ./cmd/weave 'BenchmarkRemoteFloor$' 1x
  printf '  %-46s %s s   ideal %s s   ratio %sx\n' "the same run vs the ideal" "$pa" "$ideal" "$(awk -v a="$pa" -v b="$ideal" 'BEGIN { printf "%.2f", a / b }')"
  echo "   (target: the coordinator's share of a task under 50 ms: offer to award with the bundle out, bundle back fetched and checked, landing)"
  printf '  %-46s %s ms   (offer to award %s, of it waiting for the bundle out %s, fetch %s, land %s; medians of the tasks, then of the runs)\n' \
    "coordinator per task, in the CLI run" "$(fromlog BenchmarkStartWorkRemote coord-ms/task)" \
    "$(fromlog BenchmarkStartWorkRemote award-ms/task)" "$(fromlog BenchmarkStartWorkRemote bundle-out-ms/task)" \
    "$(fromlog BenchmarkStartWorkRemote fetch-ms/task)" "$(fromlog BenchmarkStartWorkRemote land-ms/task)"
  printf '  %-46s %s us   (in the run'"'"'s temporary directory, %s, just before it; %s us just after it)\n' \
    "making one file there cost" "$(fromlog BenchmarkStartWorkRemote create-us)" "${TMPDIR:-/tmp}" "$(fromlog BenchmarkStartWorkRemote create-after-us)"
  printf '  %-46s %s ms   (from its start to its commit on the branch: the land above less its wait and its tick)\n' \
    "a landing alone" "$(fromlog BenchmarkStartWorkRemote landing-ms/task)"
  printf '  %-46s %s ms   (its base in %s ms; the task in the worker process, commit and result bundle, less the sleep)\n' \
    "the worker's own share per task" "$(fromlog BenchmarkStartWorkRemote worker-ms/task)" "$(fromlog BenchmarkStartWorkRemote base-in-ms/task)"
  cpu=$(fromlog BenchmarkStartWorkRemote cpu-ms/task) cores=$(getconf _NPROCESSORS_ONLN)
  printf '  %-46s %s ms   (%s tasks on %s cores need at least %s s of wall for it alone)\n' \
    "CPU per task, coordinator and workers" "$cpu" "$remote_tasks" "$cores" "$(awk -v c="$cpu" -v t="$remote_tasks" -v n="$cores" 'BEGIN { printf "%.1f", c * t / n / 1000 }')"
  printf '  %-46s %s ms\n' "CPU per task, the workers' share" "$(fromlog BenchmarkStartWorkRemote worker-cpu-ms/task)"
  printf '  %-46s %s ms   (its process, with its git and plugin processes; the run'"'"'s start and finish included)\n' \
    "CPU per task, the coordinator's share" "$(fromlog BenchmarkStartWorkRemote coord-cpu-ms/task)"
  single "one task through the contract net, no landing" coord-ms/op ./bus/workers 'BenchmarkOfferRoundTrip$/^window=300ms$' 20x
  for fsdir in ${REMOTE_DIRS:-}; do
    coords="" creates="" walls="" afters=""
    for ((i = 1; i <= PAIRS; i++)); do
      v=$(TMPDIR=$fsdir bench1 ./cmd/weave 'BenchmarkStartWorkRemote$' 1x coord-ms/task create-us s/run create-after-us)
      coords+=" $(sed -n 1p <<<"$v")"; creates+=" $(sed -n 2p <<<"$v")"; walls+=" $(sed -n 3p <<<"$v")"; afters+=" $(sed -n 4p <<<"$v")"
    done
    printf '  %-46s %s ms   (making one file cost %s us before the run, %s us after it; the run %s s; medians of %d runs)\n' \
      "coordinator per task, on $(df --output=fstype "$fsdir" | tail -n 1) at $fsdir" "$(echo "$coords" | median)" \
      "$(echo "$creates" | median)" "$(echo "$afters" | median)" "$(echo "$walls" | median)" "$PAIRS"
  done
fi

if want status; then
  echo "== Status (target: <= 5x grep -rc over the same files, second run)"
  pair "weave status, $WEAVE_BENCH_PLANS plans of 50 tasks" ns/op ./cmd/weave 'BenchmarkStatusProcess$' ./cmd/weave 'BenchmarkStatusGrepFloor$' 5x
fi

if want plugins; then
  echo "== Plugins (target: hook round trip within 2x of bare gRPC at p50)"
  single "plugin cold start to first call" p50-ns ./host/supervisor 'BenchmarkPluginColdStart$' 10x
  pair "hook round trip vs bare gRPC, subprocess" p50-ns ./host/supervisor 'BenchmarkHookRoundTrip$' ./plugins/pluginhost 'BenchmarkBareGRPCUnixSubprocess$' 1s
  pair "hook round trip in process vs bare gRPC" p50-ns ./plugins/pluginhost 'BenchmarkHookRoundTripInProcess$' ./plugins/pluginhost 'BenchmarkBareGRPCUnix$' 1s
  pair "tool call through gate + hooks vs direct" ns/op ./host/tools 'BenchmarkToolCallThroughGate$' ./host/tools 'BenchmarkToolCallDirect$' 1s
fi

if want mcp; then
  echo "== MCP (target: a call through the gate and hooks within 1.2x of the SDK's client alone)"
  pair "MCP echo over stdio: gate + hooks vs SDK client" ns/op ./host/mcp 'BenchmarkMCPCallThroughGate$' ./host/mcp 'BenchmarkMCPCallDirect$' 1s
fi

if want sandbox; then
  echo "== Sandbox (target: a sandboxed bash call costs at most 15 ms more than an unsandboxed one)"
  # The wall time of a call on a loaded machine is mostly waiting for a CPU;
  # its CPU time (weave's and its children's) is printed beside it.
  pair "bash \`true\` sandboxed vs unsandboxed" ns/op ./cmd/weave 'BenchmarkBashSandboxed$' ./cmd/weave 'BenchmarkBashUnsandboxed$' 50x
  printf '  %-46s %s ms (bound 15 ms)\n' "sandbox overhead per call, wall" "$(awk -v a="$pa" -v b="$pb" 'BEGIN { printf "%.1f", (a - b) / 1e6 }')"
  pair "bash \`true\` sandboxed vs unsandboxed, CPU" cpu-ns/op ./cmd/weave 'BenchmarkBashSandboxed$' ./cmd/weave 'BenchmarkBashUnsandboxed$' 50x
  printf '  %-46s %s ms (bound 15 ms)\n' "sandbox overhead per call, CPU" "$(awk -v a="$pa" -v b="$pb" 'BEGIN { printf "%.1f", (a - b) / 1e6 }')"
fi

if want model; then
  echo "== Model (target: the host adds <= 1 ms to a model call, fake model answering at once)"
  pair "model call through the host vs provider alone" ns/op ./host 'BenchmarkModelCallThroughHost$' ./host 'BenchmarkModelCallDirect$' 300x
  echo "   (target: <= 1 ms of host per agent step, i.e. per tool call; session memory bounded by the window, not the turns)"
  pair "agent step (model + read) vs model call alone" ns/op ./host 'BenchmarkAgentStep$' ./host 'BenchmarkModelCallDirect$' 300x
  single "host overhead per agent step (step - model)" host-ns/op ./host 'BenchmarkAgentStep$' 300x
  pair "session heap after 1,000 turns vs 100 (compacted)" retained-B ./host 'BenchmarkSessionMemory$/^turns=1000$' ./host 'BenchmarkSessionMemory$/^turns=100$' 1x
fi

if want bus; then
  echo "== Bus (targets: memory within 3x of channels; faces and nats within 1.5x of their floor)"
  pair "memory publish->deliver, 1 subscriber" ns/op ./bus 'BenchmarkPublish$/^subs=1$' ./bus 'BenchmarkChannelFanout$/^subs=1$' 1s
  pair "memory publish->deliver, 100 subscribers" ns/op ./bus 'BenchmarkPublish$/^subs=100$' ./bus 'BenchmarkChannelFanout$/^subs=100$' 1s
  pair "JSON-RPC sendMessage, Go client" p50-ns ./bus/jsonrpc 'BenchmarkSendMessage$' ./bus/jsonrpc 'BenchmarkBareEcho$' 1s
  pair "JSON-RPC sendMessage, raw client" p50-ns ./bus/jsonrpc 'BenchmarkSendMessageRawClient$' ./bus/jsonrpc 'BenchmarkBareEcho$' 1s
  pair "v1 envelope over UDS, Go client" p50-ns ./bus/envelope 'BenchmarkRoundTrip$/^envelope-uds$' ./bus/envelope 'BenchmarkRoundTrip$/^bare-echo-uds$' 1s
  pair "v1 envelope over UDS, raw client" p50-ns ./bus/envelope 'BenchmarkRoundTrip$/^envelope-uds-raw-client$' ./bus/envelope 'BenchmarkRoundTrip$/^bare-echo-uds$' 1s
  pair "nats backend publish->deliver vs nats.go" ns/op ./bus/natsbus 'BenchmarkPublishDeliver$' ./bus/natsbus 'BenchmarkBareNATS$' 1s
  single "400 MB over 40k append-only topics, bound 64 MiB" heap-MiB ./bus 'BenchmarkStoreFlood$' 100000x
  single "append to a full 100,000-message log" ns/op ./bus 'BenchmarkAppendFullLog$' 300000x
  single "longest append to a full 100,000-message log" max-µs ./bus 'BenchmarkAppendFullLog$' 300000x
fi
