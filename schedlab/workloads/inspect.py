"""`schedlab workloads inspect`: what a trace holds, in numbers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from schedlab.errors import UserError
from schedlab.workloads.traces.base import Trace
from schedlab.workloads.transforms import submit_span

QUANTILES = (0.5, 0.9, 0.99)
#: Readers whose `size` is in bytes (shown also in decimal units: GB = 1e9 B).
BYTE_READERS = ("swim", "squid", "bu98")


def guess_reader(path: Path) -> str:
    """The reader a file name suggests, or a UserError asking for --reader."""
    name = path.name.lower()
    if path.is_dir() or name in ("task_events", "job_events"):
        return "google"
    if ".swf" in name:
        return "swf"
    if name.startswith("fb-") or ".tsv" in name:
        return "swim"
    if "access" in name or "squid" in name:
        return "squid"
    if "bu98" in name:
        return "bu98"
    raise UserError(f"{path}: cannot tell the trace format from the name; pass --reader (swf, swim, squid, bu98, google)")


def _stats(series) -> dict[str, float]:
    out = {"mean": float(series.mean()), "min": float(series.min()), "max": float(series.max())}
    for q in QUANTILES:
        out[f"p{int(q * 100)}"] = float(series.quantile(q, interpolation="linear"))
    return out


def _decimal_bytes(x: float) -> str:
    for unit, scale in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if abs(x) >= scale:
            return f"{x / scale:.2f} {unit}"
    return f"{x:.0f} B"


def describe(trace: Trace) -> dict[str, Any]:
    jobs = trace.jobs
    info: dict[str, Any] = {"jobs": jobs.height, "counts": trace.counts,
                            "meta": {k: v for k, v in trace.meta.items() if k not in ("options",)}}
    if "submit" in jobs.columns and jobs.height:
        span = submit_span(jobs)
        info["time_span_s"] = span
        info["time_span_days"] = span / 86400.0
        if "size" in jobs.columns and span > 0:
            info["offered_work_per_s"] = float(jobs["size"].sum()) / span
        machine = trace.meta.get("machine_procs")
        if {"runtime", "procs"} <= set(jobs.columns) and isinstance(machine, int) and machine > 0 and span > 0:
            # HPC: processor-seconds asked for / processor-seconds available
            info["offered_load"] = float((jobs["runtime"] * jobs["procs"]).sum()) / (span * machine)
            info["machine_procs"] = machine
    for column in ("size", "runtime", "requested_time", "procs", "cpu", "mem", "demand"):
        if column in jobs.columns and jobs.height:
            info[column] = _stats(jobs[column].drop_nulls())
    header = trace.meta.get("header") or {}
    for key in ("MaxProcs", "MaxNodes"):
        if key in header:
            info[key] = header[key]
    return info


def render(info: dict[str, Any], path: str, reader: str) -> str:
    lines = [f"{path} ({reader})", f"  jobs                {info['jobs']}"]
    if reader in BYTE_READERS and "size" in info:
        s = info["size"]
        lines.append(f"  size (bytes)        mean {_decimal_bytes(s['mean'])}  max {_decimal_bytes(s['max'])}")
    if "time_span_s" in info:
        lines.append(f"  time span           {info['time_span_s']:.6g} s ({info['time_span_days']:.4g} days)")
    if "offered_load" in info:
        lines.append(f"  offered load        {info['offered_load']:.4g} (processor-seconds / ({info['machine_procs']} procs x span))")
    if "offered_work_per_s" in info:
        lines.append(f"  offered work / s    {info['offered_work_per_s']:.6g} (load on a rate-1 server)")
    for key in ("MaxProcs", "MaxNodes"):
        if key in info:
            lines.append(f"  {key:19s} {info[key]}")
    for column in ("size", "runtime", "requested_time", "procs", "cpu", "mem", "demand"):
        if column in info:
            s = info[column]
            lines.append(f"  {column:19s} mean {s['mean']:.6g}  p50 {s['p50']:.6g}  p90 {s['p90']:.6g}  "
                         f"p99 {s['p99']:.6g}  max {s['max']:.6g}")
    for key, value in info["counts"].items():
        lines.append(f"  count {key:13s} {value}")
    return "\n".join(lines)
