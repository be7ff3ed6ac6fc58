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

tool=prometheus
folder=prometheus-$version
building="${binaries[*]} $version from github.com/prometheus/prometheus (a cold build takes many minutes)"

# built says whether every binary is in $dir and says it is $version: the
# version is stamped at build time, as Prometheus' own build does.
built() {
  local b
  for b in "${binaries[@]}"; do
    [[ -x $dir/$b && $("$dir/$b" --version 2>/dev/null | head -n 1) == *"version $version "* ]] || return 1
  done
}

build() {
  local packages=() b
  for b in "${binaries[@]}"; do
    packages+=("github.com/prometheus/prometheus/cmd/$b@$version")
  done
  rm -rf .tmp
  GOBIN="$dir/.tmp" nice -n 19 go install -trimpath \
    -ldflags "-s -w -X github.com/prometheus/common/version.Version=$version" \
    "${packages[@]}"
  for b in "${binaries[@]}"; do
    mv ".tmp/$b" "$b"
  done
  rmdir .tmp
}

source "$(dirname "${BASH_SOURCE[0]}")/lib/cached-build.sh"
cached_build "$@"
