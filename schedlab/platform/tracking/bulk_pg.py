"""The settings of a PostgreSQL transaction that writes a batch of new runs
(`tracking_bulk.insert_new_runs`), and why each is safe.

Measured on the runs' five tables (PostgreSQL 15, 1,000 runs of ~45 rows a
transaction, 10,000 runs stored), the server spent a third of its CPU per
run in foreign-key checks (0.81 -> 0.54 CPU-ms per run without them):
every ``tags``, ``params``, ``metrics`` and ``latest_metrics`` row fires a
trigger that looks its run up in ``runs`` and locks it (``SELECT
... FOR KEY SHARE``), and every ``runs`` row does the same for its
experiment. The rows of a batch cannot break those keys: `build_new_runs`
makes each child row for a run of the same batch, ``runs`` rows are written
first in the same transaction (`insert_new_runs` checks that every child row
names one of them before writing), and until that transaction commits no
other session can see, let alone delete, those runs. What the experiment's
check also did -- hold its row against a concurrent delete until the commit
-- is done here once per batch, by taking the same lock (`lock_experiment`).
So where the role may, a batch's transaction sets ``session_replication_role
= replica`` (``SET LOCAL``: it ends with the transaction, the pooled
connection goes back as it came), which skips those triggers; the constraints
stay declared and hold for every row, as before. It also skips any trigger or
rule someone added to these tables, so it is used only when there is none:
the five tables' triggers are all internal (the foreign keys') and they have
no rules (`fast_path_allowed`, read once per database). Setting it needs a
superuser or, from PostgreSQL 15, a role granted ``SET`` on it; any other
role writes with the checks, exactly as before.

``synchronous_commit = off`` for the batch's transaction: its commit returns
before its WAL is flushed. A crash of the server (not of this process) can
then lose the last commits of the last fraction of a second, never corrupt
the database or half-write a run (a transaction is still all or nothing);
what MLflow holds is a function of the results dir, and the final
reconcile, or ``schedlab track DIR``, writes the missing runs again, found by
their config-id tag. Any role may set it; the recipe's server
(``infra/mlflow-postgres.sh``) already runs with it.
"""

from __future__ import annotations

import threading
from typing import Any

#: The tables a batch writes: the ones whose triggers and rules `fast_path_allowed` reads.
TABLES = ("runs", "tags", "params", "metrics", "latest_metrics")

#: PostgreSQL's ``server_version_num`` from which a role can be granted ``SET`` on a superuser setting.
GRANTED_SET_FROM = 150000

_allowed: dict[str, bool] = {}
_allowed_lock = threading.Lock()


def fast_path_allowed(cursor: Any, database: str) -> bool:
    """Whether this role may set ``session_replication_role`` and the five
    tables have no trigger but their foreign keys' and no rule; read once
    per ``database`` (a URI) in this process, through ``cursor``."""
    with _allowed_lock:
        known = _allowed.get(database)
    if known is not None:
        return known
    cursor.execute(
        "SELECT current_setting('is_superuser') = 'on', current_setting('server_version_num')::int, "
        "(SELECT count(*) FROM pg_trigger WHERE tgrelid = ANY(%(tables)s::regclass[]) AND NOT tgisinternal), "
        "(SELECT count(*) FROM pg_rewrite WHERE ev_class = ANY(%(tables)s::regclass[]))",
        {"tables": list(TABLES)},
    )
    superuser, version, triggers, rules = cursor.fetchone()
    may_set = bool(superuser)
    if not may_set and version >= GRANTED_SET_FROM:
        cursor.execute("SELECT has_parameter_privilege('session_replication_role', 'SET')")
        may_set = bool(cursor.fetchone()[0])
    allowed = may_set and triggers == 0 and rules == 0
    with _allowed_lock:
        _allowed[database] = allowed
    return allowed


def lock_experiment(cursor: Any, experiment_id: int) -> None:
    """Hold the experiment's row until the commit, as the foreign-key check
    of each ``runs`` row would have (the same lock: ``FOR KEY SHARE``)."""
    cursor.execute("SELECT 1 FROM experiments WHERE experiment_id = %s FOR KEY SHARE", (experiment_id,))
    if cursor.fetchone() is None:
        raise LookupError(f"experiment {experiment_id} is gone")


def prepare_batch(cursor: Any, database: str, experiment_id: int) -> bool:
    """Set up the open transaction of a batch (see the module docstring);
    whether the foreign-key triggers are skipped in it."""
    cursor.execute("SET LOCAL synchronous_commit = off")
    if not fast_path_allowed(cursor, database):
        return False
    lock_experiment(cursor, experiment_id)
    cursor.execute("SET LOCAL session_replication_role = replica")
    return True
