#!/usr/bin/env bash
# Runs the example runbook plan: copies examples/quickstart to a fresh
# directory (so the repository's copy stays unticked) and runs
# `weave start-work first-steps` there. Offline; nothing to configure.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=${1:-$(mktemp -d "${TMPDIR:-/tmp}/weave-quickstart.XXXXXX")}
mkdir -p "$work"
cp -R "$root/examples/quickstart/." "$work/"
mkdir -p "$root/bin"
(cd "$root" && go build -o bin/weave ./cmd/weave)
echo "+ cd $work && weave start-work first-steps"
cd "$work"
"$root/bin/weave" start-work first-steps
echo "+ weave status"
"$root/bin/weave" status
