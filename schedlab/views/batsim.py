"""A batch run as Batsim's ``jobs.csv`` (https://batsim.readthedocs.io,
"Output files"): what evalys, batsched's tools and other Batsim users' scripts
read, so a schedlab schedule can be drawn or analysed with them.

Columns, in Batsim's order: job_id, workload_name, profile, submission_time,
requested_number_of_resources, requested_time, success, final_state,
starting_time, execution_time, finish_time, waiting_time, turnaround_time,
stretch, allocated_resources, consumed_energy, metadata.
``allocated_resources`` is the job's processor set as Batsim writes it:
closed intervals ``a-b`` and single ids, space-separated (``0-3 8``); the
ids are the view's (``record.BatchRecorder.allocate``: the engine counts
processors, the view assigns them, contiguous-first). Every job of a batch
run completes (schedlab does not kill at the walltime): final_state
``COMPLETED_SUCCESSFULLY``, success 1; stretch is Batsim's
turnaround / execution time (not the bounded stretch of the per-job rows);
consumed_energy -1 (no energy model), as Batsim writes without one. Jobs a
sweep dropped as oversize are not in the run's rows, so not in the file.
"""

from __future__ import annotations

import csv
from pathlib import Path

from schedlab.errors import UserError
from schedlab.views.schedule import Schedule

COLUMNS = (
    "job_id",
    "workload_name",
    "profile",
    "submission_time",
    "requested_number_of_resources",
    "requested_time",
    "success",
    "final_state",
    "starting_time",
    "execution_time",
    "finish_time",
    "waiting_time",
    "turnaround_time",
    "stretch",
    "allocated_resources",
    "consumed_energy",
    "metadata",
)


def interval_set(ranges: list[tuple[int, int]]) -> str:
    """Closed ranges as Batsim writes an interval set: ``0-3 8``."""
    return " ".join(f"{a}-{b}" if b > a else f"{a}" for a, b in sorted(ranges))


def write_jobs_csv(schedule: Schedule, path: str | Path, workload_name: str = "w0") -> Path:
    """Write a batch schedule's jobs as Batsim's jobs.csv (module docstring)."""
    from schedlab.engines import known_engines

    engine = known_engines().get(schedule.engine)
    if engine is None or not engine.batsim:
        raise UserError(f"--batsim-csv: Batsim's jobs.csv describes batch runs; this is a {schedule.engine} run")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    jobs = schedule.jobs
    with path.open("w", newline="") as fh:
        out = csv.writer(fh)
        out.writerow(COLUMNS)
        for r in range(schedule.n_jobs):
            sub, start, end = (float(jobs[c][r]) for c in ("submit", "start", "end"))
            run = end - start
            turnaround = end - sub
            out.writerow(
                [
                    int(jobs["job_id"][r]),
                    workload_name,
                    f"p{int(jobs['job_id'][r])}",
                    repr(sub),
                    int(jobs["need"][r]),
                    repr(float(jobs["requested_time"][r])),
                    1,
                    "COMPLETED_SUCCESSFULLY",
                    repr(start),
                    repr(run),
                    repr(end),
                    repr(start - sub),
                    repr(turnaround),
                    repr(turnaround / run) if run > 0 else "inf",
                    interval_set(schedule.allocation.get(r, [])),
                    -1,
                    "",
                ]
            )
    return path
