#!/usr/bin/env bash
# Builds Prometheus' server (prometheus) and its rule checker (promtool)
# from the Go module proxy, once per pinned version, into a cache folder
# outside the work tree (next to hack/helm.sh's helm), so that fresh clones
# on the same machine reuse them:
#   ${PLATFORM_OPERATOR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/platform-operator}/prometheus-<version>
#
# Both are built by one go install PACKAGE@VERSION..., outside this module:
# Prometheus' dependencies never enter our go.mod, and the two binaries
# share one build of the packages they have in common. Without the build
# tag builtinassets the server embeds no web UI: the tests read its HTTP
# API only. The build runs at the lowest CPU priority: it is long and
# nothing waits for it but the tests of deploy/components/monitoring (the
# alert rules' promtool tests, and test/e2e's alerts seen by a real
# Prometheus).
#
# Usage:
#   hack/prometheus.sh          build them when missing, then print the folder
#   hack/prometheus.sh --dir    print the folder without building
set -euo pipefail

# The alert rules' tests run these; bump it here. Prometheus' module
# versions v0.3XX.Y are its releases 3.XX.Y.
version=v0.316.0
binaries=(prometheus promtool)

cache=${PLATFORM_OPERATOR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/platform-operator}
dir=$cache/prometheus-$version

if [[ ${1:-} == --dir ]]; then
  echo "$dir"
  exit 0
fi

die() {
  echo "prometheus: $*" >&2
  exit 1
}

# built says whether every binary is in $dir and says it is $version: the
# version is stamped at build time, as Prometheus' own build does.
built() {
  local b
  for b in "${binaries[@]}"; do
    [[ -x $dir/$b && $("$dir/$b" --version 2>/dev/null | head -n 1) == *"version $version "* ]] || return 1
  done
}

if ! built; then
  command -v go >/dev/null || die "the go command is not on PATH: install Go (https://go.dev/dl/)"
  mkdir -p "$dir"
  # One builder at a time per cache: a second caller waits, then finds them built.
  exec 9>"$dir/.lock"
  flock 9
  if ! built; then
    echo "prometheus: building ${binaries[*]} $version from github.com/prometheus/prometheus (a cold build takes many minutes)" >&2
    start=$SECONDS
    log=$dir/.build.log
    packages=()
    for b in "${binaries[@]}"; do
      packages+=("github.com/prometheus/prometheus/cmd/$b@$version")
    done
    rm -rf "$dir/.tmp"
    # GOFLAGS cleared: the project's own flags (-mod=...) mean nothing outside it.
    if ! (cd "$dir" && GOFLAGS= GOBIN="$dir/.tmp" nice -n 19 go install -trimpath \
      -ldflags "-s -w -X github.com/prometheus/common/version.Version=$version" \
      "${packages[@]}") >"$log" 2>&1; then
      tail -n 20 "$log" >&2
      die "building ${binaries[*]} $version failed; the whole log is $log"
    fi
    for b in "${binaries[@]}"; do
      mv "$dir/.tmp/$b" "$dir/$b"
    done
    rmdir "$dir/.tmp"
    rm -f "$log"
    echo "prometheus: built ${binaries[*]} $version in $((SECONDS - start))s" >&2
  fi
fi
echo "$dir"
