#!/usr/bin/env bash
# The torture suite: the built weave against hostile files and plugins (a
# symlinked lock, state.json as a FIFO and as a link to /dev/zero, deeply
# nested plans, a plugin flooding stderr and returning a huge reason). It
# prints, per scenario, the exit code, wall time and peak RSS of weave, and
# the latency of `weave plan list` run beside it, with the idle figures first.
set -euo pipefail
cd "$(dirname "$0")/.."
exec go test -tags torture -run '^TestTorture$' -count=1 -timeout 15m -v ./cmd/weave "$@"
