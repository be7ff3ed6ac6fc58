#!/usr/bin/env bash
# Prints the directory of PostgreSQL 15's server programs (postgres, initdb,
# pg_basebackup, pg_rewind, pg_controldata), installing Debian's
# postgresql-15 package first when it is missing: the tests of
# internal/instance/postgres run real PostgreSQL servers on the host.
#
# It looks, in order, in $POSTGRES_BIN_DIR, /usr/lib/postgresql/15/bin
# (Debian and Ubuntu) and the directory pg_config on PATH names, and takes
# the first that holds a postgres of major version 15. It installs with
# apt-get, as root or through sudo without a password; elsewhere it says
# what to install.
#
# Usage:
#   hack/postgres.sh          install PostgreSQL 15 when missing, then print the folder
#   hack/postgres.sh --dir    print the folder without installing; fail when missing
set -euo pipefail

major=15
package=postgresql-$major

die() {
  echo "postgres: $*" >&2
  exit 1
}

# find_bindir prints the first candidate folder that holds a postgres of the
# wanted major version; it fails when none does.
find_bindir() {
  local candidates=() dir version
  [[ -n ${POSTGRES_BIN_DIR:-} ]] && candidates+=("$POSTGRES_BIN_DIR")
  candidates+=("/usr/lib/postgresql/$major/bin")
  if command -v pg_config >/dev/null; then
    dir=$(pg_config --bindir 2>/dev/null) && candidates+=("$dir")
  fi
  for dir in "${candidates[@]}"; do
    [[ -x $dir/postgres ]] || continue
    # "postgres (PostgreSQL) 15.14 (Debian 15.14-0+deb12u1)"
    version=$("$dir/postgres" --version 2>/dev/null | awk '{ print $3 }') || continue
    if [[ ${version%%.*} == "$major" ]]; then
      echo "$dir"
      return 0
    fi
  done
  return 1
}

# root_prefix prints how to run a command as root: nothing when this is
# root, sudo when it needs no password; it fails with what to run otherwise.
root_prefix() {
  if (( EUID == 0 )); then
    return
  elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
    echo sudo
  else
    die "installing $package needs root: run 'sudo apt-get install -y $package', then this script again"
  fi
}

install() {
  command -v apt-get >/dev/null ||
    die "PostgreSQL $major is missing and this system has no apt-get: install PostgreSQL $major's server programs, then put its pg_config on PATH or set POSTGRES_BIN_DIR to its bin folder"
  local log sudo
  sudo=$(root_prefix) || exit 1
  log=$(mktemp "${TMPDIR:-/tmp}/postgres-install.XXXXXX.log")
  echo "postgres: installing $package with apt-get (log: $log)" >&2
  # A stale package list does not know the package: update it once and retry.
  if ! $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y "$package" >"$log" 2>&1; then
    echo "postgres: apt-get install failed; updating the package lists and retrying" >&2
    if ! $sudo apt-get update >>"$log" 2>&1 ||
      ! $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y "$package" >>"$log" 2>&1; then
      tail -n 15 "$log" >&2
      die "could not install $package (whole log: $log): install PostgreSQL $major by hand, or set POSTGRES_BIN_DIR to its bin folder"
    fi
  fi
  rm -f "$log"
}

main() {
  local dir
  if dir=$(find_bindir); then
    echo "$dir"
    return
  fi
  [[ ${1:-} == --dir ]] && die "PostgreSQL $major is not installed: run hack/postgres.sh (without --dir) to install it"
  install
  dir=$(find_bindir) || die "$package is installed but no postgres $major was found in /usr/lib/postgresql/$major/bin"
  echo "postgres: installed $package" >&2
  echo "$dir"
}

main "$@"
