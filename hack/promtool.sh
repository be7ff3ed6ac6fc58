#!/usr/bin/env bash
# Builds promtool, Prometheus' rule checker, from the Go module proxy, once
# per pinned version, into a cache folder outside the work tree (next to
# hack/helm.sh's helm), so that fresh clones on the same machine reuse it:
#   ${PLATFORM_OPERATOR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/platform-operator}/promtool-<version>
#
# promtool is built with go install PACKAGE@VERSION, outside this module:
# Prometheus' dependencies never enter our go.mod. The build runs at the
# lowest CPU priority: it is long and nothing waits for it but the tests
# of deploy/components/monitoring.
#
# Usage:
#   hack/promtool.sh          build it when missing, then print the folder
#   hack/promtool.sh --dir    print the folder without building
set -euo pipefail

# The alert rules' tests run this promtool; bump it here. Prometheus'
# module versions v0.3XX.Y are its releases 3.XX.Y.
version=v0.316.0

cache=${PLATFORM_OPERATOR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/platform-operator}
dir=$cache/promtool-$version

if [[ ${1:-} == --dir ]]; then
  echo "$dir"
  exit 0
fi

die() {
  echo "promtool: $*" >&2
  exit 1
}

# built says whether $dir/promtool is there and says it is $version: the
# version is stamped at build time, as Prometheus' own build does.
built() {
  [[ -x $dir/promtool && $("$dir/promtool" --version 2>/dev/null | head -n 1) == *"version $version "* ]]
}

if ! built; then
  command -v go >/dev/null || die "the go command is not on PATH: install Go (https://go.dev/dl/)"
  mkdir -p "$dir"
  # One builder at a time per cache: a second caller waits, then finds promtool built.
  exec 9>"$dir/.lock"
  flock 9
  if ! built; then
    echo "promtool: building promtool $version from github.com/prometheus/prometheus (a cold build takes several minutes)" >&2
    start=$SECONDS
    log=$dir/.build.log
    # GOFLAGS cleared: the project's own flags (-mod=...) mean nothing outside it.
    if ! (cd "$dir" && GOFLAGS= GOBIN="$dir/.tmp" nice -n 19 go install -trimpath \
      -ldflags "-s -w -X github.com/prometheus/common/version.Version=$version" \
      "github.com/prometheus/prometheus/cmd/promtool@$version") >"$log" 2>&1; then
      tail -n 20 "$log" >&2
      die "building promtool $version failed; the whole log is $log"
    fi
    mv "$dir/.tmp/promtool" "$dir/promtool"
    rmdir "$dir/.tmp"
    rm -f "$log"
    echo "promtool: built promtool $version in $((SECONDS - start))s" >&2
  fi
fi
echo "$dir"
