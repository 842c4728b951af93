#!/usr/bin/env bash
# Start a local MLflow tracking server for schedlab sweeps.
#
#   infra/mlflow-server.sh [PORT] [DATA_DIR]
#
# PORT (default $MLFLOW_PORT or 5000) and DATA_DIR (default $MLFLOW_DATA_DIR or
# ./mlflow-server) can also come from the environment. The server binds to
# 127.0.0.1 only, keeps runs in DATA_DIR/mlflow.db (SQLite) and artifacts in
# DATA_DIR/artifacts, and runs in the foreground (Ctrl-C stops it). Extra
# arguments after DATA_DIR are passed to `mlflow server`.
#
# Speed: the SQLite file is put in WAL mode before the server starts (a commit
# then syncs one log file instead of journal and database: MLflow writes a run in
# several transactions, and fsyncs were most of each request's ~50 ms), and
# uvicorn runs MLFLOW_WORKERS worker processes (default: one per CPU, at least
# 2). SQLite still has one writer at a time: for a team, use the PostgreSQL
# recipe, infra/mlflow-postgres.sh. Either server spends ~35-45 ms of CPU per
# new run (three requests; benchmarks/tracking.py measures it), the client
# ~16 ms (all of `schedlab track`): runs/s <= free cores x 1000 / their sum.
set -euo pipefail

port="${1:-${MLFLOW_PORT:-5000}}"
data_dir="${2:-${MLFLOW_DATA_DIR:-./mlflow-server}}"
shift $(( $# > 2 ? 2 : $# ))

case "$port" in
  ''|*[!0-9]*) echo "mlflow-server.sh: port must be a number, got '$port'" >&2; exit 2 ;;
esac
if ! command -v mlflow >/dev/null 2>&1; then
  echo "mlflow-server.sh: 'mlflow' not found on PATH (pip install mlflow)" >&2
  exit 2
fi

mkdir -p "$data_dir/artifacts"
data_dir="$(cd "$data_dir" && pwd)"
uri="http://127.0.0.1:$port"

# The URI alone on stdout's first line (scripts can read it); the rest on stderr.
echo "$uri"
echo "mlflow-server.sh: tracking URI $uri (data in $data_dir); e.g. export MLFLOW_TRACKING_URI=$uri" >&2

# WAL mode is a property of the file: set once, kept (python3 ships sqlite3).
python3 -c 'import sqlite3, sys; sqlite3.connect(sys.argv[1]).execute("PRAGMA journal_mode=WAL")' "$data_dir/mlflow.db"
cpus="$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)"
export MLFLOW_SERVER_ENABLE_JOB_EXECUTION="${MLFLOW_SERVER_ENABLE_JOB_EXECUTION:-false}"

exec mlflow server \
  --host 127.0.0.1 \
  --port "$port" \
  --workers "${MLFLOW_WORKERS:-$(( cpus < 2 ? 2 : cpus ))}" \
  --backend-store-uri "sqlite:///$data_dir/mlflow.db" \
  --artifacts-destination "$data_dir/artifacts" \
  --serve-artifacts \
  "$@"
