"""The job table each engine reads, declared once (``JobColumns``): the
columns a table must have, the ones it may have, and groups of alternatives
of which it needs one each. The engine's registry entry carries it
(``Engine.jobs``); the platform checks a generator's table against it
(``schedlab.api.workloads.check_job_table``), the engines' adapters check
their input against it, and the Gymnasium environments read it. It lives
beside the ``[system]`` declarations because the simulators check their own
input against it (``schedlab.sim`` imports nothing above itself)."""

from __future__ import annotations

from dataclasses import dataclass

from schedlab.workloads.queue_columns import OPTIONAL_COLUMNS, REQUIRED_COLUMNS


@dataclass(frozen=True)
class JobColumns:
    required: tuple[str, ...] = ("job_id", "submit")
    optional: tuple[str, ...] = ()
    #: Groups of alternative columns: the table needs one of each group.
    one_of: tuple[tuple[str, ...], ...] = ()

    def missing(self, columns) -> list[str]:
        """What ``columns`` lacks: required names and "a or b" for an unmet group."""
        out = [c for c in self.required if c not in columns]
        out += [" or ".join(group) for group in self.one_of if not any(c in columns for c in group)]
        return out

    def describe(self) -> str:
        """One line: required; optional (docs and messages)."""
        need = list(self.required) + [" (or ".join(g) + ")" * (len(g) - 1) for g in self.one_of]
        return ", ".join(need) + (f"; {', '.join(self.optional)}" if self.optional else "")


#: The queue's canonical table (``schedlab.workloads.schema``): estimate defaults to size, weight to 1.
QUEUE_JOBS = JobColumns(REQUIRED_COLUMNS, (*OPTIONAL_COLUMNS, "weight_class"))
PACKING_JOBS = JobColumns(
    ("job_id", "submit"),
    ("duration", "runtime", "demand", "cpu", "mem", "group", "estimate"),
    (("duration", "runtime"), ("demand", "cpu")),
)
BATCH_JOBS = JobColumns(
    ("job_id", "submit", "runtime", "procs"), ("requested_time", "cpu_need", "memory", "machine_procs")
)
DFRS_JOBS = JobColumns(("job_id", "submit", "runtime", "procs"), ("cpu_need", "memory"))

__all__ = ["BATCH_JOBS", "DFRS_JOBS", "PACKING_JOBS", "QUEUE_JOBS", "JobColumns"]
