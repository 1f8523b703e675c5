#!/usr/bin/env bash
# Builds release archives of weave for linux, darwin and windows (amd64 and
# arm64) into dist/, with SHA256SUMS beside them.
#
#   scripts/release.sh v1.2.3          # version defaults to `git describe`
#   WEAVE_TARGETS="linux/amd64" scripts/release.sh v1.2.3
#
# Each binary is stamped with its version, commit and build date, which
# `weave version` prints. Unix archives are .tar.gz, Windows ones .zip.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

version=${1:-$(git describe --tags --always --dirty 2>/dev/null || echo devel)}
commit=$(git rev-parse HEAD 2>/dev/null || echo unknown)
date=$(date -u +%Y-%m-%dT%H:%M:%SZ)
targets=${WEAVE_TARGETS:-"linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 windows/arm64"}
dist="$root/dist"
rm -rf "$dist"
mkdir -p "$dist"

sha256() { if command -v sha256sum >/dev/null; then sha256sum "$@"; else shasum -a 256 "$@"; fi; }

ldflags="-s -w -X main.version=$version -X main.commit=$commit -X main.date=$date"
for target in $targets; do
  os=${target%/*} arch=${target#*/}
  name="weave_${version#v}_${os}_${arch}"
  stage="$dist/$name"
  mkdir -p "$stage"
  exe=weave
  [ "$os" = windows ] && exe=weave.exe
  echo "building $name"
  CGO_ENABLED=0 GOOS=$os GOARCH=$arch go build -trimpath -ldflags "$ldflags" -o "$stage/$exe" ./cmd/weave
  cp README.md LICENSE "$stage/"
  cp -R docs "$stage/docs"   # the front page links its pages
  if [ "$os" = windows ]; then
    (cd "$dist" && zip -qr "$name.zip" "$name")
  else
    tar -C "$dist" -czf "$dist/$name.tar.gz" "$name"
  fi
  rm -rf "$stage"
done
(cd "$dist" && sha256 weave_* > SHA256SUMS)
echo "archives and SHA256SUMS in $dist"
