# Sourced by the scripts that build a tool from the Go module proxy once per
# pinned version (hack/helm.sh, hack/prometheus.sh, hack/seaweedfs.sh): the
# cache folder outside the work tree, --dir, one builder at a time and the
# build's log are the same for each.
#
# The sourcing script sets
#   tool      its name in messages
#   folder    its folder in the cache, with the version in it
#   building  what the build makes, from where, and how long a cold one takes
# and defines
#   built     true when $dir holds what the pinned version makes
#   build     builds into $dir (run in $dir; its output goes to a log that
#             is shown when it fails)
# then calls cached_build "$@", which prints $dir.

cache=${PLATFORM_OPERATOR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/platform-operator}
dir=$cache/$folder

die() {
  echo "$tool: $*" >&2
  exit 1
}

# cached_build builds when the cache lacks the pinned version (unless the
# only argument is --dir), then prints the folder.
cached_build() {
  if [[ ${1:-} == --dir ]]; then
    echo "$dir"
    return
  fi
  if ! built; then
    command -v go >/dev/null || die "the go command is not on PATH: install Go (https://go.dev/dl/)"
    mkdir -p "$dir"
    # One builder at a time per cache: a second caller waits, then finds it built.
    exec 9>"$dir/.lock"
    flock 9
    if ! built; then
      echo "$tool: building $building" >&2
      local start=$SECONDS log=$dir/.build.log
      # GOFLAGS cleared: the project's own flags (-mod=...) mean nothing
      # outside it. The build runs in the background and is waited for: in
      # an if's condition, bash would ignore set -e inside it and go on
      # past a failed step.
      (cd "$dir" && GOFLAGS= build) >"$log" 2>&1 &
      if ! wait $!; then
        tail -n 20 "$log" >&2
        die "the build failed; the whole log is $log"
      fi
      rm -f "$log"
      built || die "the build finished, but $dir does not hold what it should"
      echo "$tool: built in $((SECONDS - start))s" >&2
    fi
  fi
  echo "$dir"
}
