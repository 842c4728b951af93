"""A user's policy against the built-in it copies (a benchmark: prints
figures, asserts nothing).

Each built-in module below is copied verbatim into a temporary folder outside
the repository and loaded the way a sweep loads user code
(``schedlab.usercode.resolve``: the spec's ``use = "file.py:Name"``). Both
classes then run through ``Engine.run`` on the same workload, alternating
A B A B, and the script prints each one's best time and the ratio
user / built-in per pair. The user path adds no per-event cost: the loaded
class is called exactly as a built-in is, so the ratio should be ~1.0.

The built-in is timed on the Python reference path (``path="reference"``):
that is the seam a user's class runs on (a user's class, even a verbatim
copy, never runs on a compiled kernel -- those match built-ins by identity).
The last column is the built-in on its default path (compiled where the
engine has a kernel for it), for scale.

    python benchmarks/user_policy.py [--repeat 5] [--njobs 10000]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

import schedlab
from schedlab.engines import get_engine
from schedlab.usercode import resolve
from schedlab.workloads.lublin import lublin_workload
from schedlab.workloads.packing_synthetic import packing_workload
from schedlab.workloads.synthetic import queue_workload

CASES = [  # engine, built-in module, class, built-in name, system
    ("queue", "queue/fsp.py", "FSPEPlusPS", "FSPE+PS", None),
    ("queue", "queue/srpt.py", "SRPTEPlusPS", "SRPTE+PS", None),
    ("packing", "packing/best_fit.py", "BFJS", "BF-J/S", {"servers": 20, "capacity": 1.0, "epoch": 1.0}),
    ("batch", "batch/easy.py", "EASY", "EASY", {"model": "procs", "procs": 256}),
]


def workload(engine: str, njobs: int, rng):
    if engine == "queue":
        return queue_workload(rng, njobs=njobs)
    if engine == "packing":
        return packing_workload(
            rng,
            slots=njobs // 2,
            rate=2.0 * 20 / 50 / 0.3 * 0.9,
            uniform=(0.05, 0.55),
            service="geometric",
            mean_service=50,
        )
    return lublin_workload(rng, njobs=njobs, nodes=256)


def timed(engine, jobs, policy, system, path: str = "reference") -> float:
    started = time.perf_counter()
    engine.run(jobs, policy, None, system, path=path)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--njobs", type=int, default=10_000)
    args = parser.parse_args()
    engines = Path(schedlab.__file__).parent / "engines"
    folder = Path(tempfile.mkdtemp(prefix="schedlab-user-"))
    try:
        print(
            f"{'policy':10s} {'built-in best':>14s} {'user copy best':>15s} {'ratio median (min..max)':>26s}"
            f" {'built-in, default path':>23s}"
        )
        for i, (name, module, cls, builtin, system) in enumerate(CASES):
            copy = folder / f"copy{i}.py"
            shutil.copy(engines / name / "policies" / module.split("/", 1)[1], copy)
            user_cls = resolve(f"{copy.name}:{cls}", folder, "benchmark").load()
            engine = get_engine(name)
            jobs = workload(name, args.njobs, np.random.default_rng(1))
            timed(engine, jobs, builtin, system)  # warm-up (imports, caches)
            timed(engine, jobs, builtin, system, "fast")  # and the kernel's compile or load
            a, b, fast = [], [], []
            for _ in range(args.repeat):
                a.append(timed(engine, jobs, builtin, system))
                b.append(timed(engine, jobs, user_cls, system))
                fast.append(timed(engine, jobs, builtin, system, "fast"))
            ratios = [y / x for x, y in zip(a, b)]
            print(
                f"{builtin:10s} {min(a):13.3f}s {min(b):14.3f}s "
                f"{statistics.median(ratios):11.3f} ({min(ratios):.3f}..{max(ratios):.3f})"
                f" {min(fast):22.4f}s"
            )
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
