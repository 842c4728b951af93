"""schedlab's DFRS engine against the authors' own simulator (vcsim) on one shared annotated trace.

Prints figures; asserts nothing. Issue 32: FCFS agrees with vcsim, the /per
algorithms did not; this script measures by how much, per job, and where the
two first diverge, with schedlab's default and with any [system] options.

What it does: builds one Lublin trace (the DFRS paper's synthetic setting:
128 nodes, annotation ``"dfrs-synthetic"``), rounds it to what vcsim's reader
keeps (integer submit and runtime seconds, CPU and memory in integer percent:
the annotation's values already are), writes it in vcsim's ``.dat`` input
format (one line per job: id, submit, tasks, CPU need, memory, runtime --
``sim.py``'s reader, ``Job(int, int, int, float, float, int)``), runs vcsim's
``results/scripts/sim.py`` on it under Python 2 and schedlab's engines on the
same rounded table, and compares per job.

Setup that worked (2026-11, this machine; repeat it to run the comparison):

1. vcsim: ``fetch github:marklee77/vcsim``, then
   ``git --git-dir=<mirror>/repo archive HEAD | tar -x -C vcsim-run/src``
   (any directory; pass ``--vcsim DIR`` or set ``VCSIM_DIR``). Its HEAD
   (d9465bc) writes its summary to stdout: no MySQL is needed to run it (only
   the report scripts read a database).
2. Python 2.7 (``python2.7``; ``--python``
   or ``VCSIM_PYTHON``). ``psyco`` is optional in ``sim.py``.
3. ``pymprog`` (GLPK) is imported at the top of ``sim.py`` but only called
   by ``allocate_cpu_and_start`` for ``opttarget:util`` / ``avgyield`` and by
   ``allocate_cpu_and_start_stretch`` for ``avgstretch``: the ``maxminyield``
   branch (OPT=MIN) and the ``fcfs`` scheduler return before any LP. This
   script puts a stand-in ``pymprog`` module (raising if ``model`` is ever
   called) on the Python 2 path, so no LP solver is installed and an
   OPT=AVG run would fail loudly rather than silently.
4. Per-job completion times: vcsim prints only its summary; a small driver
   (written by this script to a temporary directory, not vcsim code) runs
   ``sim.py`` with ``execfile`` and then writes each job's id, submit and
   ``endtime`` from the simulator's own ``jobs`` list.

Usage::

    python benchmarks/vcsim_compare.py [--njobs 300] [--seed 1] [--load 0] [--hpc2n-week K]
        [--origin first|trace] [--policies FCFS,Greedy*/per/OPT=MIN,...]
        [--option star_pass=instant-end --option victims=put-back ...]

``--hpc2n-week K`` takes HPC2N week K instead (the DFRS pipelines' cut and
``"dfrs-hpc2n"`` annotation, 120 nodes; memory rounded to whole percents, at
least 1 %, in both simulators' input). ``--origin first`` (default) shifts the trace so that its first submission is
at t = 0, where both simulators start the periodic grid (vcsim: k x period
from the file's t = 0; schedlab: first release + k x period);
``--origin trace`` keeps the model's times, so the grids differ by the first
submission's offset (docs/dfrs.md row 5). Each ``--option`` is added to the
dfrs engine's [system] table; several ``--variant`` strings
(``"name:key=value,key=value"``) run several option sets side by side;
``--variant vcsim`` is every option that follows vcsim (``VCSIM_OPTIONS``).
vcsim's runs take seconds to minutes (pure Python 2 MCB8); pin them to a core
(``taskset -c 0``) on a shared machine.

``--ablation`` runs every vcsim option, each alone and all but each, and
the closing table sums it up (mean |C - C_vcsim| per job, jobs off by more
than vcsim's 1-s rounding).

Measured (docs/dfrs.md, "The /per difference, measured", has the tables):
FCFS equal on every job; with ``--variant vcsim`` Greedy*/per, GreedyP*/per,
GreedyPM*/per and MCB8*/per equal to vcsim on every job of 1,000-job seeds
1 and 2 (the model's arrivals, origin trace) and of seed 3 at ``--load 0.9``
(schedlab's defaults: 120-17,900 s mean error per job); all 13 ``/per``
algorithms of Table 2 (``VCSIM_ALGOS``) equal on every job of the 300-job
default trace, of the three 1,000-job traces above and of HPC2N week 109
(origin first). HPC2N week 109: GreedyPM*/per equal on every job once
``victims_settle = "instant-end"`` is among the options. The last option,
``minvt_units = "ms"`` (MINVT's test in vcsim's whole milliseconds), was
found with /per alone on seeds 1 and 3: without it 77 and 125 jobs off
(a virtual time summed in floats to 599.9999999999999 s is pinned by
MINVT = 600 in schedlab, 600,000 ms and repacked in vcsim). Each
vcsim run takes 8-30 s on the 300-job trace, ~2-3 min on 1,000 jobs and
4-22 min on the HPC2N week (MCB8*/per the slowest) on one core; ``--keep
DIR`` caches vcsim's completion times there, so a second run of the same
trace and algorithm only runs schedlab.

EASY (vcsim's ``easy``) runs on the batch engine as FCFS does (whole nodes,
``estimates = "exact"``), with schedlab's canonical rule and with
``easy_backfill = "vcsim"`` (``BATCH_VCSIM_OPTIONS``; the dfrs options and
variants do not apply to FCFS and EASY). Measured (docs/dfrs.md, "EASY,
measured"): with ``easy_backfill = "vcsim"`` equal to vcsim on every job of
Lublin seeds 1, 2 (1,000 jobs), seed 3 at load 0.9, the 300-job default and
HPC2N weeks 1, 50 and 109; the canonical rule differs on 0-848 jobs.

If vcsim or Python 2 is not found, the script says so and exits 0.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl

from schedlab.engines import get_engine
from schedlab.sim.bound.stretch_bound import bounded_stretch
from schedlab.workloads.registry import workload_kind

PENALTY = 300  # s: the paper's penalty (vcsim's restart_delay)
NODES = 128  # the paper's synthetic cluster
#: The pipelines' data root (schedlab.pipelines.inputs): the repository's ../shared/data unless $SCHEDLAB_DATA says.
os.environ.setdefault("SCHEDLAB_DATA", str(Path(__file__).resolve().parents[2] / "shared" / "data"))
HPC2N_NODES = 120  # the paper's HPC2N cluster (dual-core nodes)
END_TOL = 1e-6  # s: completion times closer than this are "equal" (vcsim's are integers)
SECOND_TOL = 1.0 + 1e-6  # s: vcsim rounds every completion up to a whole second; a difference above this is more

#: schedlab policy name -> vcsim scheduler and its words (reports/scripts/fixnames.sh maps them back).
VCSIM_ALGOS: dict[str, list[str]] = {
    "FCFS": ["fcfs"],
    "EASY": ["easy"],
    "Greedy*/per/OPT=MIN": ["smart", "greedy", "activeres", "per:600", "opttarget:maxminyield"],
    "GreedyP*/per/OPT=MIN": ["smart", "greedy-pmtn", "activeres", "per:600", "opttarget:maxminyield"],
    "GreedyPM*/per/OPT=MIN/MINVT=600": [
        "smart",
        "greedy-pmtn-migr",
        "activeres",
        "per:600",
        "minvt:600",
        "opttarget:maxminyield",
    ],
    "MCB8*/per/OPT=MIN/MINVT=600": ["mcb8", "activeres", "per:600", "minvt:600", "opttarget:maxminyield"],
    "Greedy/per/OPT=MIN": ["smart", "greedy", "per:600", "opttarget:maxminyield"],
    "GreedyP/per/OPT=MIN": ["smart", "greedy-pmtn", "per:600", "opttarget:maxminyield"],
    "GreedyPM/per/OPT=MIN": ["smart", "greedy-pmtn-migr", "per:600", "opttarget:maxminyield"],
    "GreedyPM*/per/OPT=MIN": ["smart", "greedy-pmtn-migr", "activeres", "per:600", "opttarget:maxminyield"],
    "GreedyP/per/OPT=MIN/MINVT=600": ["smart", "greedy-pmtn", "per:600", "minvt:600", "opttarget:maxminyield"],
    "GreedyPM/per/OPT=MIN/MINVT=600": ["smart", "greedy-pmtn-migr", "per:600", "minvt:600", "opttarget:maxminyield"],
    "GreedyP*/per/OPT=MIN/MINVT=600": [
        "smart",
        "greedy-pmtn",
        "activeres",
        "per:600",
        "minvt:600",
        "opttarget:maxminyield",
    ],
    "MCB8/per/OPT=MIN/MINVT=600": ["mcb8", "per:600", "minvt:600", "opttarget:maxminyield"],
    "/per/OPT=MIN/MINVT=600": ["smart", "per:600", "minvt:600", "opttarget:maxminyield"],
    "Greedy*/OPT=MIN": ["smart", "greedy", "activeres", "opttarget:maxminyield"],
    "GreedyP*/OPT=MIN": ["smart", "greedy-pmtn", "activeres", "opttarget:maxminyield"],
    "GreedyPM*/OPT=MIN": ["smart", "greedy-pmtn-migr", "activeres", "opttarget:maxminyield"],
}
#: Every dfrs [system] option that follows the authors' simulator (docs/dfrs.md): ``--variant vcsim``.
VCSIM_OPTIONS = {
    "mcb8_rules": "vcsim",
    "relabel": "none",
    "cpu_units": "percent",
    "penalties": "instant-net",
    "period_origin": "zero",
    "time_units": "seconds",
    "priority_units": "ms",
    "arrival_at_period": "remap",
    "star_pass": "vcsim",
    "victims": "put-back",
    "victims_settle": "instant-end",
    "mcb8_remaps": "instant-end",
    "minvt_units": "ms",
}
#: The batch engine's policies here (the DFRS pipelines' cluster model, exact estimates) and the
#: [system] options of each ``--variant vcsim`` for them.
BATCH_POLICIES = ("FCFS", "EASY")
BATCH_VCSIM_OPTIONS = {"EASY": {"easy_backfill": "vcsim"}}
DEFAULT_POLICIES = [
    "FCFS",
    "EASY",
    "Greedy*/per/OPT=MIN",
    "GreedyP*/per/OPT=MIN",
    "GreedyPM*/per/OPT=MIN/MINVT=600",
    "MCB8*/per/OPT=MIN/MINVT=600",
]

# Stand-in for pymprog: never called on the OPT=MIN / FCFS paths (module docstring, step 3).
PYMPROG_SHIM = """def model(*args, **kwargs):
    raise RuntimeError("pymprog stand-in: an LP target was requested; install pymprog/GLPK for it")
"""

# Python 2 driver: run vcsim's sim.py unchanged, then write its jobs' completion times.
DRIVER = """import sys
out, sim = sys.argv[1], sys.argv[2]
sys.argv = [sim] + sys.argv[3:]
g = {"__name__": "__main__", "__file__": sim}
execfile(sim, g)
f = open(out, "w")
for job in g["jobs"]:
    f.write("%d %d %d\\n" % (job.id, job.subtime, job.endtime))
f.close()
"""


def build_trace(njobs: int, seed: int, load: float, origin: str, hpc2n_week: int | None = None) -> pl.DataFrame:
    """The Lublin trace (or HPC2N week ``hpc2n_week``, the DFRS pipelines' cut and annotation),
    annotated and rounded to vcsim's input precision."""
    if hpc2n_week is None:
        kind = workload_kind("lublin")
        spec = {"njobs": njobs, "nodes": NODES, "load": load, "annotation": "dfrs-synthetic"}
    else:
        from schedlab.pipelines.dfrs_common import workload

        kind = workload_kind("trace")
        spec = {k: v for k, v in workload("hpc2n", "paper").items() if k != "kind"} | {"window": hpc2n_week}
    params = kind.complete(spec, "vcsim_compare")
    kind.check(params)
    shared = kind.load_shared(params) if kind.load_shared else None
    jobs = kind.build(np.random.default_rng(np.random.SeedSequence(seed)), params, shared)
    submit = np.rint(jobs["submit"].to_numpy())
    if origin == "first":
        submit -= submit.min()
    runtime = np.maximum(1.0, np.rint(jobs["runtime"].to_numpy()))
    cpu = np.rint(100 * jobs["cpu_need"].to_numpy()) / 100
    mem = np.maximum(0.01, np.rint(100 * jobs["memory"].to_numpy()) / 100)  # vcsim's percent; at least 1 %
    return pl.DataFrame(
        {
            "job_id": np.arange(1, jobs.height + 1),
            "submit": submit,
            "runtime": runtime,
            "procs": jobs["procs"].to_numpy(),
            "cpu_need": cpu,
            "memory": mem,
        }
    )


def write_dat(jobs: pl.DataFrame, path: Path) -> None:
    """vcsim's .dat: id submit tasks cpu mem runtime, one job a line (';' lines are comments)."""
    lines = ["; written by schedlab benchmarks/vcsim_compare.py: id submit tasks cpu mem runtime"]
    for r in jobs.iter_rows(named=True):
        lines.append(
            f"{r['job_id']} {int(r['submit'])} {r['procs']} {r['cpu_need']:.2f} {r['memory']:.2f} {int(r['runtime'])}"
        )
    path.write_text("\n".join(lines) + "\n")


def run_vcsim(
    python: str, sim: Path, work: Path, dat: Path, words: list[str], nodes: int = NODES
) -> tuple[dict[int, int], str, float]:
    """vcsim's completion time per job id, its printed output and the wall time (0 when read from
    ``--keep``'s cache: ``ends-<key>.txt``, keyed by the trace, the words and the cluster)."""
    key = hashlib.sha256(dat.read_bytes() + " ".join([str(nodes), str(PENALTY), *words]).encode()).hexdigest()[:16]
    cached = work / f"ends-{key}.txt"
    if cached.is_file():
        return _read_ends(cached), "(cached)", 0.0
    out = work / "ends.txt"
    env = {**os.environ, "PYTHONPATH": str(work / "shim")}
    env.pop("PYTHONHOME", None)
    t = time.perf_counter()
    with dat.open() as stdin:
        proc = subprocess.run(
            [python, str(work / "driver.py"), str(out), str(sim), str(nodes), str(PENALTY), *words],
            stdin=stdin,
            capture_output=True,
            text=True,
            env=env,
            check=False,
        )
    wall = time.perf_counter() - t
    if proc.returncode != 0:
        raise RuntimeError(f"vcsim failed ({' '.join(words)}): {proc.stderr.strip()[-2000:]}")
    out.replace(cached)
    return _read_ends(cached), proc.stdout, wall


def _read_ends(path: Path) -> dict[int, int]:
    ends = {}
    for line in path.read_text().split("\n"):
        if line.strip():
            i, _sub, end = (int(x) for x in line.split())
            ends[i] = end
    return ends


def run_schedlab(
    jobs: pl.DataFrame, policy: str, options: dict[str, str], nodes: int = NODES
) -> tuple[np.ndarray, dict]:
    if policy in BATCH_POLICIES:
        system = {"model": "nodes", "nodes": nodes, "tasks_per_node": 1, "estimates": "exact", **options}
        res = get_engine("batch").run(jobs, policy, None, system)
    else:
        res = get_engine("dfrs").run(jobs, policy, None, {"nodes": nodes, "penalty": PENALTY, **options})
    per_job = res.jobs
    order = np.argsort(np.asarray(per_job["job_id"]))
    return np.asarray(per_job["end"], dtype=float)[order], res.summary


TABLE: list[tuple[str, str, float, float, str, str]] = []  # the closing table's rows


def describe(label: str, jobs: pl.DataFrame, end: np.ndarray, ref: np.ndarray | None, policy: str = "") -> str:
    submit = jobs["submit"].to_numpy()
    runtime = jobs["runtime"].to_numpy()
    s = bounded_stretch(submit, runtime, end)
    if ref is None:
        TABLE.append((policy, label, float(s.mean()), float(s.max()), "", ""))
    else:
        d = np.abs(end - ref)
        TABLE.append(
            (policy, label, float(s.mean()), float(s.max()), f"{d.mean():.1f}", str(int((d > SECOND_TOL).sum())))
        )
    text = f"    {label:28s} avg stretch {s.mean():9.3f}  max stretch {s.max():9.3f}"
    if ref is not None:
        diff = end - ref
        differ = np.abs(diff) > END_TOL
        text += f"  jobs differing {int(differ.sum()):4d} (> 1 s: {int((np.abs(diff) > SECOND_TOL).sum()):4d})"
        if differ.any():
            text += f"  |dC| mean {np.abs(diff).mean():8.1f} s  max {np.abs(diff).max():8.0f} s"
            big = np.abs(diff) > SECOND_TOL
            first = np.flatnonzero(big if big.any() else differ)
            k = first[np.argmin(np.minimum(end, ref)[first])]
            text += (
                f"  first{' > 1 s' if big.any() else ''}: job {int(jobs['job_id'][int(k)])} (submit {submit[k]:.0f})"
                f" C {end[k]:.1f} vs {ref[k]:.0f}"
            )
    return text


def parse_variants(args) -> list[tuple[str, dict[str, str]]]:
    variants = [("schedlab default", {})]
    if args.option:
        variants.append(("schedlab + options", dict(o.split("=", 1) for o in args.option)))
    if args.ablation:
        variants.append(("every vcsim option", dict(VCSIM_OPTIONS)))
        for key, value in VCSIM_OPTIONS.items():
            variants.append((f"only {key}", {key: value}))
        for key in VCSIM_OPTIONS:
            variants.append((f"all but {key}", {k: v for k, v in VCSIM_OPTIONS.items() if k != key}))
    for v in args.variant or []:
        name, _, rest = v.partition(":")
        if name == "vcsim" and not rest:
            variants.append(("every vcsim option", dict(VCSIM_OPTIONS)))
            continue
        variants.append((name, dict(o.split("=", 1) for o in rest.split(",") if o)))
    return variants


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--vcsim", default=os.environ.get("VCSIM_DIR", "vcsim-run/src"))
    ap.add_argument("--python", default=os.environ.get("VCSIM_PYTHON", "python2.7"))
    ap.add_argument("--njobs", type=int, default=300)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--load", type=float, default=0.0, help="0: the model's own arrivals (the unscaled set)")
    ap.add_argument("--origin", choices=("first", "trace"), default="first")
    ap.add_argument("--hpc2n-week", type=int, help="HPC2N week K (the DFRS pipelines' cut) instead of Lublin")
    ap.add_argument("--policies", default=",".join(DEFAULT_POLICIES))
    ap.add_argument("--option", action="append", help="key=value added to the dfrs [system] table")
    ap.add_argument("--variant", action="append", help='"name:key=value,key=value": one more option set')
    ap.add_argument("--keep", help="directory to keep the .dat and vcsim's outputs in")
    ap.add_argument(
        "--ablation", action="store_true", help="every vcsim option, each alone, and all but each (VCSIM_OPTIONS)"
    )
    args = ap.parse_args()

    sim = Path(args.vcsim) / "results" / "scripts" / "sim.py"
    if not sim.is_file() or not Path(args.python).is_file():
        print(f"vcsim not set up (need {sim} and Python 2 at {args.python}): see this script's docstring; skipped.")
        return
    policies = [p for p in args.policies.split(",") if p]
    unknown = [p for p in policies if p not in VCSIM_ALGOS]
    if unknown:
        print(f"--policies: no vcsim equivalent known for {unknown}; choose from {sorted(VCSIM_ALGOS)}")
        sys.exit(2)
    variants = parse_variants(args)

    jobs = build_trace(args.njobs, args.seed, args.load, args.origin, args.hpc2n_week)
    nodes = NODES if args.hpc2n_week is None else HPC2N_NODES
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="vcsim-compare-"))
    (work / "shim").mkdir(parents=True, exist_ok=True)
    (work / "shim" / "pymprog.py").write_text(PYMPROG_SHIM)
    (work / "driver.py").write_text(DRIVER)
    dat = work / "trace.dat"
    write_dat(jobs, dat)
    print(
        (
            f"Lublin trace: {jobs.height} jobs, seed {args.seed}, load {args.load:g}, annotation dfrs-synthetic, "
            if args.hpc2n_week is None
            else f"HPC2N week {args.hpc2n_week}: {jobs.height} jobs, annotation dfrs-hpc2n, "
        )
        + f"{nodes} nodes, first submission {jobs['submit'].min():.0f} s (origin {args.origin}); "
        f"penalty {PENALTY} s; vcsim {sim} ({dat})"
    )
    for policy in policies:
        words = VCSIM_ALGOS[policy]
        ends, _out, wall = run_vcsim(args.python, sim, work, dat, words, nodes)
        ref = np.array([ends[int(i)] for i in jobs["job_id"]], dtype=float)
        print(f"  {policy}   (vcsim: {' '.join(words)}; {wall:.1f} s)")
        print(describe("vcsim", jobs, ref, None, policy))
        if policy in BATCH_POLICIES:  # the dfrs options do not apply: the default and vcsim's rule, if any
            extra = BATCH_VCSIM_OPTIONS.get(policy)
            runs = [variants[0]] + ([("easy_backfill = vcsim", extra)] if extra else [])
        else:
            runs = variants
        for name, options in runs:
            end, _summary = run_schedlab(jobs, policy, options, nodes)
            print(describe(name, jobs, end, ref, policy), flush=True)
    print("\n| algorithm | run | avg stretch | max stretch | mean abs(C - C_vcsim) (s) | jobs off by > 1 s |")
    print("|---|---|---|---|---|---|")
    for policy, label, avg, mx, dc, off in TABLE:
        print(f"| {policy} | {label} | {avg:.3f} | {mx:.3f} | {dc} | {off} |")


if __name__ == "__main__":
    main()
