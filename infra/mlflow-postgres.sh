#!/usr/bin/env bash
# A team's MLflow tracking server for schedlab sweeps: `mlflow server` backed by
# PostgreSQL (the backend MLflow documents for shared use), on this machine.
#
#   infra/mlflow-postgres.sh DATA_DIR [PG_PORT] [MLFLOW_PORT] [MLFLOW SERVER ARGS...]
#
# DATA_DIR (created if needed) holds the PostgreSQL cluster (DATA_DIR/pg, made
# with initdb on first use), its log (DATA_DIR/postgres.log), its socket dir and
# the artifacts (DATA_DIR/artifacts). PG_PORT (default $PG_PORT or 5432) and
# MLFLOW_PORT (default $MLFLOW_PORT or 5000) are where PostgreSQL and MLflow
# listen, both on 127.0.0.1 only (put a reverse proxy with authentication in
# front to share it beyond this machine). Runs in the foreground; Ctrl-C or
# SIGTERM stops MLflow and then PostgreSQL. The tracking URI alone is printed on
# stdout's first line once the server answers; the rest goes to stderr.
#
# Settings, and why (each one an environment variable):
#   MLFLOW_WORKERS (default: the number of CPUs, at least 2) uvicorn worker
#     processes: MLflow's request handling is Python, one request at a time per
#     process, so one worker serialises every client's requests.
#   MLFLOW_SQLALCHEMYSTORE_POOL_SIZE (default 8) and _MAX_OVERFLOW (default 8):
#     database connections per worker, so concurrent requests do not queue for
#     a connection.
#   PG_SYNCHRONOUS_COMMIT (default off): a commit returns before its WAL record
#     is flushed to disk. MLflow writes a run in several small transactions; with
#     the default (on) each waits for an fsync, the per-request stall. Off
#     never corrupts the database; a crash of the machine can lose the last
#     fraction of a second of commits -- and schedlab's runs are a function of
#     the results dir, which `schedlab track DIR` re-logs and checks.
#   PG_USER (default postgres): the unprivileged account PostgreSQL runs as
#     when this script runs as root (postgres refuses to run as root); it must
#     own DATA_DIR/pg (the script chowns what it creates).
#   PG_BIN: the folder of initdb / pg_ctl / postgres (default: pg_config
#     --bindir, else the newest /usr/lib/postgresql/*/bin, else PATH).
#   MLFLOW: the mlflow command (default: mlflow on PATH).
# Debian/Ubuntu: `apt-get install -y postgresql`; Python: psycopg2-binary
# (pip install 'schedlab[postgres]').
set -euo pipefail

usage() { echo "usage: infra/mlflow-postgres.sh DATA_DIR [PG_PORT] [MLFLOW_PORT] [MLFLOW SERVER ARGS...]" >&2; exit 2; }
[ $# -ge 1 ] || usage
data_dir="$1"
pg_port="${2:-${PG_PORT:-5432}}"
mlflow_port="${3:-${MLFLOW_PORT:-5000}}"
shift $(( $# > 3 ? 3 : $# ))  # the rest: extra `mlflow server` arguments
for p in "$pg_port" "$mlflow_port"; do
  case "$p" in ''|*[!0-9]*) echo "mlflow-postgres.sh: ports must be numbers, got '$p'" >&2; exit 2 ;; esac
done
mlflow_cmd="${MLFLOW:-mlflow}"
command -v "$mlflow_cmd" >/dev/null 2>&1 || { echo "mlflow-postgres.sh: '$mlflow_cmd' not found (pip install mlflow)" >&2; exit 2; }

bin="${PG_BIN:-}"
if [ -z "$bin" ] && command -v pg_config >/dev/null 2>&1 && [ -x "$(pg_config --bindir)/initdb" ]; then
  bin="$(pg_config --bindir)"
fi
if [ -z "$bin" ]; then
  bin="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)"
fi
if [ -z "$bin" ] && command -v initdb >/dev/null 2>&1; then
  bin="$(dirname "$(command -v initdb)")"
fi
if [ -z "$bin" ] || [ ! -x "$bin/initdb" ] || [ ! -x "$bin/pg_ctl" ]; then
  echo "mlflow-postgres.sh: PostgreSQL server binaries not found (apt-get install -y postgresql, or set PG_BIN)" >&2
  exit 2
fi

mkdir -p "$data_dir/artifacts"
data_dir="$(cd "$data_dir" && pwd)"
pg_dir="$data_dir/pg"
socket_dir="$data_dir/pg-socket"
pg_log="$data_dir/postgres.log"
mkdir -p "$socket_dir"
touch "$pg_log"

as_pg=()  # run PostgreSQL's programs as an unprivileged user when we are root
if [ "$(id -u)" = 0 ]; then
  pg_user="${PG_USER:-postgres}"
  id "$pg_user" >/dev/null 2>&1 || { echo "mlflow-postgres.sh: running as root needs an unprivileged user for postgres (PG_USER=$pg_user does not exist)" >&2; exit 2; }
  mkdir -p "$pg_dir"
  chown "$pg_user" "$pg_dir" "$socket_dir" "$pg_log"
  chmod 700 "$pg_dir"
  as_pg=(runuser -u "$pg_user" --)
fi

if [ ! -s "$pg_dir/PG_VERSION" ]; then
  echo "mlflow-postgres.sh: initdb $pg_dir" >&2
  "${as_pg[@]}" "$bin/initdb" -D "$pg_dir" -U mlflow --auth=trust --encoding=UTF8 --no-locale >/dev/null
fi

settings="-c listen_addresses=127.0.0.1 -p $pg_port -c unix_socket_directories=$socket_dir"
settings="$settings -c synchronous_commit=${PG_SYNCHRONOUS_COMMIT:-off} -c max_connections=200"
"${as_pg[@]}" "$bin/pg_ctl" -D "$pg_dir" -l "$pg_log" -w -t 60 -o "$settings" start >&2

mlflow_pid=""
stop() {
  trap - EXIT INT TERM
  if [ -n "$mlflow_pid" ]; then
    kill -TERM "$mlflow_pid" 2>/dev/null || true
    wait "$mlflow_pid" 2>/dev/null || true
  fi
  "${as_pg[@]}" "$bin/pg_ctl" -D "$pg_dir" -m fast -w stop >&2 || true
}
trap stop EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# The database, once (the -h socket dir: no TCP auth needed for this step).
if ! "${as_pg[@]}" "$bin/psql" -h "$socket_dir" -p "$pg_port" -U mlflow -d postgres -tAc \
    "SELECT 1 FROM pg_database WHERE datname = 'mlflow'" | grep -q 1; then
  "${as_pg[@]}" "$bin/createdb" -h "$socket_dir" -p "$pg_port" -U mlflow mlflow
fi

cpus="$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)"
workers="${MLFLOW_WORKERS:-$(( cpus < 2 ? 2 : cpus ))}"
export MLFLOW_SQLALCHEMYSTORE_POOL_SIZE="${MLFLOW_SQLALCHEMYSTORE_POOL_SIZE:-8}"
export MLFLOW_SQLALCHEMYSTORE_MAX_OVERFLOW="${MLFLOW_SQLALCHEMYSTORE_MAX_OVERFLOW:-8}"
export MLFLOW_SERVER_ENABLE_JOB_EXECUTION="${MLFLOW_SERVER_ENABLE_JOB_EXECUTION:-false}"
uri="http://127.0.0.1:$mlflow_port"
"$mlflow_cmd" server \
  --host 127.0.0.1 \
  --port "$mlflow_port" \
  --workers "$workers" \
  --backend-store-uri "postgresql+psycopg2://mlflow@127.0.0.1:$pg_port/mlflow" \
  --artifacts-destination "$data_dir/artifacts" \
  --serve-artifacts \
  "$@" >&2 &
mlflow_pid=$!

# The URI on stdout once the server answers (scripts and tests read it).
healthy=""
for _ in $(seq 1 600); do
  if ! kill -0 "$mlflow_pid" 2>/dev/null; then
    echo "mlflow-postgres.sh: mlflow server exited" >&2
    exit 1
  fi
  if python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=2).read()' \
      "$uri/health" 2>/dev/null; then
    healthy=1
    break
  fi
  sleep 0.2
done
[ -n "$healthy" ] || { echo "mlflow-postgres.sh: mlflow server not answering at $uri after 120 s" >&2; exit 1; }
echo "$uri"
echo "mlflow-postgres.sh: tracking URI $uri (PostgreSQL on 127.0.0.1:$pg_port, data in $data_dir, $workers workers); e.g. export MLFLOW_TRACKING_URI=$uri" >&2
wait "$mlflow_pid"
