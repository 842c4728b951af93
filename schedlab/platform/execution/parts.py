"""A retried task's parts: the driver keeps each row once.

A task's rows arrive as `Part`s (`schedlab.platform.storage.part`: encoded by
the worker, `tasks.encode_result`; written by the driver, `store.publish`).
Ray may run a task again after a worker died, and both runs may deliver:
`keep_only` cuts a part down to the row keys not yet delivered.
"""

from __future__ import annotations

import pyarrow as pa

# Part is used here and imported from here by the runner.
from schedlab.platform.storage.part import Part as Part
from schedlab.platform.storage.part import decode, encode
from schedlab.platform.storage.store import SUMMARY


def keep_only(part: Part, accepted: set[tuple[str, int]]) -> Part | None:
    """``part`` restricted to the rows whose key is in ``accepted`` (a retried
    task delivered twice: one row per key). The whole part, or None, when
    all or none of its keys are accepted (the usual cases: no decoding)."""
    keep = [k for k in part.keys if k in accepted]
    if len(keep) == len(part.keys):
        return part
    if not keep:
        return None
    import pyarrow.compute as pc

    wanted = pa.array([f"{c}\0{r}" for c, r in keep], pa.string())

    def only(table: pa.Table) -> pa.Table:
        label = pc.binary_join_element_wise(table["config_id"], pc.cast(table["replication"], pa.string()), "\0")
        return table.filter(pc.is_in(label, value_set=wanted))

    if part.table is not None:
        return Part(part.policy, keep, {}, 0, only(part.table))
    files, job_rows = {}, 0
    for name, data in part.files.items():
        table = only(decode(data))
        files[name] = encode(table)
        if name != SUMMARY:
            job_rows += table.num_rows
    return Part(part.policy, keep, files, job_rows)
