#!/usr/bin/env bash
# Runs dsh's whole test suite on a fresh machine with Go: installs what the
# tests need (tmux, ripgrep, jq, python3 and PostgreSQL from Debian, Node packages from
# the committed lock file), starts a private PostgreSQL cluster, then runs
# every Go test with the race detector.
#
# The PostgreSQL cluster is this run's alone: its own data directory, port
# and socket directory under a temporary directory, run as an unprivileged
# user (PostgreSQL refuses root), password authentication on 127.0.0.1 only,
# stopped and removed when the script exits. Tests find it through:
#
#   DSH_TEST_DATABASE_URL   connection URL of the cluster's database (a
#                           superuser role "dsh" with a random password);
#                           each test makes its own schema or database in it
#   DSH_TEST_POSTGRES=required
#                           a test that needs PostgreSQL and finds no URL
#                           fails instead of skipping (CI must not go green
#                           without the PostgreSQL tests)
#   DSH_TEST_PG_BIN         the directory of the server binaries (initdb,
#                           pg_ctl), for tests that run a cluster of their
#                           own, e.g. to restart it under a live session
#   DSH_TEST_PG_USER        the unprivileged user such clusters run as when
#                           the tests run as root
#
# internal/pgtest reads these for Go tests.
#
# Browser tests (ui/browser) drive Debian's chromium headless:
#
#   DSH_TEST_BROWSER=required
#                           a browser test that finds no chromium fails
#                           instead of skipping
#   DSH_CHROMIUM            the browser binary (default: chromium on PATH)
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"

pg_bindir() {
  local d found=""
  for d in /usr/lib/postgresql/*/bin; do
    [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ] && found=$d
  done
  echo "$found"
}

need=()
command -v tmux >/dev/null 2>&1 || need+=(tmux)
command -v rg >/dev/null 2>&1 || need+=(ripgrep)
# Hook scripts in the end-to-end tests are written as users write them:
# bash with jq, Python, Node.
command -v jq >/dev/null 2>&1 || need+=(jq)
command -v python3 >/dev/null 2>&1 || need+=(python3)
# The web UI and the static trace are tested in a real browser.
command -v chromium >/dev/null 2>&1 || need+=(chromium)
if [ -z "$(pg_bindir)" ]; then
  need+=(postgresql)
  # Only the binaries are wanted: no system cluster on port 5432.
  if [ ! -e /etc/postgresql-common/createcluster.conf ]; then
    $SUDO mkdir -p /etc/postgresql-common
    echo "create_main_cluster = false" | $SUDO tee /etc/postgresql-common/createcluster.conf >/dev/null
  fi
fi
if [ ${#need[@]} -gt 0 ]; then
  if command -v apt-get >/dev/null 2>&1; then
    $SUDO apt-get update -qq >/dev/null || true
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
  else
    echo "test.sh: please install: ${need[*]}" >&2
  fi
fi

if [ -f package-lock.json ] && command -v npm >/dev/null 2>&1; then
  npm ci --no-audit --no-fund --loglevel=error
fi

pg_root=""
stop_pg() {
  if [ -n "$pg_root" ] && [ -d "$pg_root/data" ]; then
    $as_pg "$DSH_TEST_PG_BIN/pg_ctl" -D "$pg_root/data" -m immediate -w stop >/dev/null 2>&1 || true
  fi
  [ -n "$pg_root" ] && rm -rf "$pg_root"
}
start_pg() {
  DSH_TEST_PG_BIN=$(pg_bindir)
  if [ -z "$DSH_TEST_PG_BIN" ]; then
    echo "test.sh: PostgreSQL server binaries not found (apt-get install postgresql)" >&2
    exit 1
  fi
  as_pg=""
  DSH_TEST_PG_USER=""
  if [ "$(id -u)" -eq 0 ]; then
    DSH_TEST_PG_USER=postgres
    id -u "$DSH_TEST_PG_USER" >/dev/null 2>&1 || useradd --system --no-create-home "$DSH_TEST_PG_USER"
    as_pg="runuser -u $DSH_TEST_PG_USER --"
  fi
  pg_root=$(mktemp -d /tmp/dsh-test-pg.XXXXXX)
  trap stop_pg EXIT
  mkdir -p "$pg_root/sock"
  local pw
  pw=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' | head -c 24)
  printf '%s\n' "$pw" >"$pg_root/pw"
  [ -n "$DSH_TEST_PG_USER" ] && chown -R "$DSH_TEST_PG_USER" "$pg_root"
  $as_pg "$DSH_TEST_PG_BIN/initdb" -D "$pg_root/data" -U dsh --pwfile="$pg_root/pw" \
    --auth=scram-sha-256 -E UTF8 --locale=C >"$pg_root/initdb.log" 2>&1 ||
    { cat "$pg_root/initdb.log" >&2; exit 1; }
  rm -f "$pg_root/pw"
  local port tries=0
  while :; do
    port=$((20000 + RANDOM % 30000))
    # fsync off: the tests kill dsh, never the machine.
    if $as_pg "$DSH_TEST_PG_BIN/pg_ctl" -D "$pg_root/data" -l "$pg_root/server.log" -w -t 60 \
      -o "-p $port -k $pg_root/sock -c listen_addresses=127.0.0.1 -c max_connections=400 -c fsync=off -c synchronous_commit=off -c full_page_writes=off" \
      start >/dev/null 2>&1; then
      break
    fi
    tries=$((tries + 1))
    if [ $tries -ge 5 ]; then
      cat "$pg_root/server.log" >&2
      exit 1
    fi
  done
  PGPASSWORD=$pw psql -qX -h 127.0.0.1 -p "$port" -U dsh -d postgres -c "CREATE DATABASE dsh_test" >/dev/null
  export DSH_TEST_DATABASE_URL="postgres://dsh:$pw@127.0.0.1:$port/dsh_test?sslmode=disable"
  export DSH_TEST_POSTGRES=required DSH_TEST_PG_BIN DSH_TEST_PG_USER
}
start_pg
export DSH_TEST_BROWSER=required

# dsh builds for macOS too (its sandbox there is "none", said in doctor):
# this keeps Linux-only calls behind build tags.
GOOS=darwin GOARCH=arm64 go build ./...

go test -race -timeout 15m ./...
