#!/usr/bin/env bash
# Builds the local control plane from the Go module proxy, once per pinned
# version: etcd, kube-apiserver, kube-controller-manager, kube-scheduler and
# kubectl from k8s.io/kubernetes, and kwok with its stage definitions.
#
# The versions are pinned in one place each: hack/tools/kube/go.mod
# (k8s.io/kubernetes, which pins etcd) and hack/tools/kwok/go.mod (kwok).
# Binaries go to a cache folder outside the work tree, so that fresh clones on
# the same machine reuse them:
#   ${PLATFORM_OPERATOR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/platform-operator}/kube-<version>-kwok-<version>
#
# Usage:
#   hack/kube-binaries.sh          build what is missing, then print the folder
#   hack/kube-binaries.sh --dir    print the folder without building
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
kube_module=$root/hack/tools/kube
kwok_module=$root/hack/tools/kwok
# Building k8s.io/kubernetes fills the Go build cache with about 3 GiB.
min_free_mib=4096

die() {
  echo "kube-binaries: $*" >&2
  exit 1
}

# module_version prints the version that a tool module's go.mod requires.
module_version() {
  awk -v mod="$2" '$1 == mod { print $2; exit } $1 == "require" && $2 == mod { print $3; exit }' "$1/go.mod"
}

kube_version=$(module_version "$kube_module" k8s.io/kubernetes)
kwok_version=$(module_version "$kwok_module" sigs.k8s.io/kwok)
[[ -n $kube_version && -n $kwok_version ]] || die "cannot read the pinned versions from $kube_module/go.mod and $kwok_module/go.mod"

cache=${PLATFORM_OPERATOR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/platform-operator}
dir=$cache/kube-$kube_version-kwok-$kwok_version

if [[ ${1:-} == --dir ]]; then
  echo "$dir"
  exit 0
fi

# check_go fails unless the go command is at least the version go.mod names.
check_go() {
  command -v go >/dev/null || die "the go command is not on PATH: install Go $1 or newer (https://go.dev/dl/)"
  local have
  have=$(go env GOVERSION 2>/dev/null) || die "'go env GOVERSION' failed: is Go installed correctly?"
  have=${have#go}
  if [[ $(printf '%s\n%s\n' "$1" "$have" | sort -V | head -n1) != "$1" ]]; then
    die "Go $have is too old: the control plane needs Go $1 or newer (https://go.dev/dl/)"
  fi
}

check_disk() {
  local free_kib
  free_kib=$(df -Pk "$1" | awk 'NR == 2 { print $4 }')
  if (( free_kib / 1024 < min_free_mib )); then
    die "only $((free_kib / 1024)) MiB free on the disk of $1: building the control plane needs about $min_free_mib MiB"
  fi
}

# build NAME PACKAGE MODULE [LDFLAGS]: go build PACKAGE in MODULE to $dir/NAME,
# printing progress every 30 s while the cold build runs.
build() {
  local name=$1 pkg=$2 module=$3 ldflags=${4:-}
  if [[ -x $dir/$name ]]; then
    echo "kube-binaries: $name is already built" >&2
    return
  fi
  local log=$dir/.build-$name.log start=$SECONDS
  echo "kube-binaries: building $name from $pkg (a cold build takes minutes; later runs reuse it)" >&2
  (cd "$module" && go build -trimpath -ldflags "-s -w $ldflags" -o "$dir/.$name.tmp" "$pkg") >"$log" 2>&1 &
  local pid=$!
  while ! wait_for "$pid" 30; do
    echo "kube-binaries: still building $name, $(elapsed $start)" >&2
  done
  if ! wait "$pid"; then
    tail -n 20 "$log" >&2
    die "building $name failed after $(elapsed $start); the whole log is $log"
  fi
  mv "$dir/.$name.tmp" "$dir/$name"
  rm -f "$log"
  echo "kube-binaries: built $name in $(elapsed $start)" >&2
}

# wait_for PID SECONDS: true once PID has exited, false after SECONDS.
wait_for() {
  local i
  for ((i = 0; i < $2; i++)); do
    kill -0 "$1" 2>/dev/null || return 0
    sleep 1
  done
  ! kill -0 "$1" 2>/dev/null
}

elapsed() {
  local s=$((SECONDS - $1))
  printf '%dm%02ds' $((s / 60)) $((s % 60))
}

# copy_stages copies the kwok Stage definitions that kwok itself ships: nodes
# become Ready and keep a heartbeat (with node Leases, as kubelets do), pods
# run at once. It refreshes them on every run: they are a few small files.
copy_stages() {
  local src
  src=$(cd "$kwok_module" && go list -m -f '{{.Dir}}' sigs.k8s.io/kwok) || die "cannot find the source of kwok $kwok_version in the module cache"
  rm -rf "$dir/.kwok-stages.tmp"
  mkdir -p "$dir/.kwok-stages.tmp"
  local stage
  for stage in node/fast node/heartbeat-with-lease pod/fast; do
    for file in "$src/kustomize/stage/$stage"/*.yaml; do
      [[ $(basename "$file") == kustomization.yaml ]] && continue
      cp "$file" "$dir/.kwok-stages.tmp/"
    done
  done
  chmod -R u+w "$dir/.kwok-stages.tmp"
  rm -rf "$dir/kwok-stages"
  mv "$dir/.kwok-stages.tmp" "$dir/kwok-stages"
}

main() {
  mkdir -p "$dir"
  # One builder at a time per cache: a second caller waits, then finds the
  # binaries built.
  exec 9>"$cache/.lock"
  if ! flock -n 9; then
    echo "kube-binaries: another build is running; waiting for it" >&2
    flock 9
  fi

  local missing=0 name
  for name in etcd kube-apiserver kube-controller-manager kube-scheduler kubectl kwok; do
    [[ -x $dir/$name ]] || missing=1
  done
  if (( missing )); then
    check_go "$(awk '$1 == "go" { print $2; exit }' "$kube_module/go.mod")"
    check_disk "$cache"
    local version_flags="-X k8s.io/component-base/version.gitVersion=$kube_version"
    version_flags+=" -X k8s.io/component-base/version.gitMajor=$(cut -d. -f1 <<<"${kube_version#v}")"
    version_flags+=" -X k8s.io/component-base/version.gitMinor=$(cut -d. -f2 <<<"$kube_version")"
    build etcd ./cmd/etcd "$kube_module"
    build kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver "$kube_module" "$version_flags"
    build kube-controller-manager k8s.io/kubernetes/cmd/kube-controller-manager "$kube_module" "$version_flags"
    build kube-scheduler k8s.io/kubernetes/cmd/kube-scheduler "$kube_module" "$version_flags"
    build kubectl k8s.io/kubernetes/cmd/kubectl "$kube_module" "$version_flags"
    build kwok sigs.k8s.io/kwok/cmd/kwok "$kwok_module"
  fi
  copy_stages
  echo "$dir"
}

main
