"""schedlab's queue engine against schedsim, the PSBS authors' simulator, on
identical workloads (a benchmark: prints figures, asserts nothing).

For every policy schedsim has (all 13 of schedlab's built-ins), on the same
job table -- the same submit times, sizes, estimates and weights, fed to both
-- it prints schedsim's wall time, schedlab's (compiled fast path, and the
Python reference), and the ratio schedsim / schedlab-fast. The default
workloads are the issue's: the paper's default (10k jobs, Weibull shape 0.25,
load 0.9, sigma 0.5) and 100k jobs at load 0.99 with shape 0.25 and 1. Each
time is the best of --repeat runs, schedsim and schedlab alternated. The last
column compares mean sojourn times: schedsim discretises (eps = 1e-6 of work
for LAS, FSP's virtual time), so they agree closely, not to the bit.

Getting schedsim (nothing is fetched at run time)
-------------------------------------------------
    git clone https://github.com/bigfootproject/schedsim /somewhere/schedsim

schedsim imports ``blist`` (an old C extension that does not build on current
Pythons). A thin shim over sortedcontainers (a schedlab dependency) stands in
for it -- save these three lines as ``blist.py`` in a folder of your own (not
in schedlab's tree; e.g. next to schedsim's files):

    from sortedcontainers import SortedDict as sorteddict
    from sortedcontainers import SortedList as sortedlist
    blist = list

then run

    python benchmarks/queue_vs_schedsim.py --schedsim /somewhere/schedsim [--blist DIR_WITH_blist.py]
        [--workloads default,100k-0.25,100k-1] [--policies PS,PSBS] [--repeat 3] [--seed 1]

(``$SCHEDSIM_PATH`` may stand for ``--schedsim``.) Without schedsim the script
says how to get it and exits 0. schedsim is slow at 100k jobs (O(n) per event
for several policies: minutes per run); ``--repeat`` applies to 10k-job
workloads, the 100k ones run once.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

from schedlab.engines.queue.policies import QUEUE_POLICIES
from schedlab.engines.queue.sim import fast as queue_fast
from schedlab.engines.queue.sim.engine import simulate
from schedlab.workloads.synthetic import queue_workload

#: schedlab policy -> (schedsim scheduler class, uses estimates, uses weights).
SCHEDSIM = {
    "FIFO": ("FIFO", False, False),
    "PS": ("PS", False, False),
    "GPS": ("GPS", False, True),
    "LAS": ("LAS", False, False),
    "SRPT": ("SRPT", False, False),
    "SRPTE": ("SRPT", True, False),
    "SRPTE+PS": ("SRPT_plus_PS", True, False),
    "SRPTE+LAS": ("SRPT_plus_LAS", True, False),
    "FSP": ("FSP", False, False),
    "FSPE": ("FSP", True, False),
    "FSPE+PS": ("FSP_plus_PS", True, False),
    "FSPE+LAS": ("FSP_plus_LAS", True, False),
    "PSBS": ("PSBS", True, True),
}

WORKLOADS = {  # name -> (njobs, shape, load); sigma 0.5, exponential inter-arrivals
    "default": (10_000, 0.25, 0.9),
    "100k-0.25": (100_000, 0.25, 0.99),
    "100k-1": (100_000, 1.0, 0.99),
}

HOW_TO = """schedsim (the PSBS authors' simulator) is not available: skipped.
To run this comparison:
    git clone https://github.com/bigfootproject/schedsim /somewhere/schedsim
    # save as /somewhere/shim/blist.py (a stand-in for the unmaintained blist):
    #     from sortedcontainers import SortedDict as sorteddict
    #     from sortedcontainers import SortedList as sortedlist
    #     blist = list
    python benchmarks/queue_vs_schedsim.py --schedsim /somewhere/schedsim --blist /somewhere/shim
(details in this script's docstring)"""


def load_schedsim(path: str | None, blist_dir: str | None):
    """schedsim's (simulator, schedulers) modules, or None with a reason."""
    if not path:
        return None, "no --schedsim PATH (or $SCHEDSIM_PATH) given"
    if not os.path.isfile(os.path.join(path, "schedulers.py")):
        return None, f"{path}: no schedulers.py there (is it a schedsim checkout?)"
    for folder in (blist_dir, path):
        if folder and folder not in sys.path:
            sys.path.insert(0, folder)
    try:
        import schedulers  # noqa: F401
        import simulator
    except ImportError as err:
        return None, f"importing schedsim failed: {err} (see the blist shim in this script's docstring)"
    return (simulator, sys.modules["schedulers"]), ""


def run_schedsim(mods, name: str, submit, size, estimate, weight) -> tuple[float, float]:
    """(wall time, mean sojourn) of schedsim's scheduler for ``name``."""
    simulator, schedulers = mods
    cls_name, uses_estimates, uses_weights = SCHEDSIM[name]
    jobs = list(zip(range(len(submit)), submit.tolist(), size.tolist()))
    # schedsim asks for estimates in arrival order (ties by job id, as schedlab's table is sorted)
    estimation = simulator.fixed_estimations(estimate.tolist()) if uses_estimates else simulator.identity
    priorities = dict(enumerate(weight.tolist())) if uses_weights else None
    started = time.perf_counter()
    done = list(simulator.simulator(jobs, getattr(schedulers, cls_name), estimation, priorities))
    wall = time.perf_counter() - started
    completion = np.empty(len(submit))
    for t, job in done:
        completion[job] = t
    return wall, float(np.mean(completion - submit))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--schedsim", default=os.environ.get("SCHEDSIM_PATH"), help="a schedsim checkout")
    parser.add_argument("--blist", default=None, help="folder holding the blist.py shim (see the docstring)")
    parser.add_argument("--workloads", default=",".join(WORKLOADS), help=f"comma-separated: {', '.join(WORKLOADS)}")
    parser.add_argument("--policies", default=",".join(SCHEDSIM), help="comma-separated policy names")
    parser.add_argument("--repeat", type=int, default=3, help="best of this many runs (10k-job workloads)")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()

    mods, why = load_schedsim(args.schedsim, args.blist)
    if mods is None:
        print(f"{why}\n{HOW_TO}")
        return
    queue_fast.compile_all()
    for wname in args.workloads.split(","):
        njobs, shape, load = WORKLOADS[wname]
        jobs = queue_workload(np.random.default_rng(args.seed), njobs=njobs, shape=shape, load=load, sigma=0.5)
        arrays = [jobs[c].to_numpy() for c in ("submit", "size", "estimate", "weight")]
        repeat = args.repeat if njobs <= 10_000 else 1
        print(f"\n{wname}: {njobs} jobs, Weibull shape {shape}, load {load}, sigma 0.5 (best of {repeat})")
        print(
            f"{'policy':10s} {'schedsim s':>11s} {'fast s':>9s} {'ref s':>8s} {'schedsim/fast':>14s} "
            f"{'schedsim/ref':>13s} {'events/s fast':>14s} {'MST rel. diff':>14s}"
        )
        for name in args.policies.split(","):
            policy = QUEUE_POLICIES[name]
            t_ss = t_fast = t_ref = float("inf")
            for _ in range(repeat):
                wall, mst_ss = run_schedsim(mods, name, *arrays)
                t_ss = min(t_ss, wall)
                started = time.perf_counter()
                completion, events = queue_fast.simulate(name, *arrays)
                t_fast = min(t_fast, time.perf_counter() - started)
                started = time.perf_counter()
                simulate(*arrays, policy)
                t_ref = min(t_ref, time.perf_counter() - started)
            mst = float(np.mean(completion - arrays[0]))
            print(
                f"{name:10s} {t_ss:11.3f} {t_fast:9.4f} {t_ref:8.3f} {t_ss / t_fast:14.1f} {t_ss / t_ref:13.1f} "
                f"{events / t_fast:14.3g} {abs(mst_ss - mst) / mst:14.2e}",
                flush=True,
            )


if __name__ == "__main__":
    main()
