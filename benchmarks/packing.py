"""Packing-engine speed: tasks/s per policy (a benchmark: prints figures,
asserts nothing).

* the Google clusterdata-2011 prefix (292k completed tasks, max(cpu, mem) as
  one resource), 1000 servers of capacity 1, decisions every 100 ms, at
  traffic scaling 1 and 1.6 (arrival times x 1 and x 0.625);
* the Fig. 4 setting: 5 servers, demands uniform in [0.01, 0.19] and
  [0.1, 0.9], geometric service of mean 100 slots, intensity 0.95.

    python benchmarks/packing.py [--data ../shared/data] [--slots 200000]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from schedlab.engines import get_engine
from schedlab.workloads.registry import workload_kind

POLICIES = ("BF-J/S", "VQS-BF", "FIFO-FF", "VQS")


def bench(jobs, system, label):
    engine = get_engine("packing")
    for policy in POLICIES:
        started = time.perf_counter()
        result = engine.run(jobs, policy, {}, system)
        wall = time.perf_counter() - started
        print(f"{label:34s} {policy:8s} {jobs.height:9d} tasks {wall:7.2f} s {jobs.height / wall:10.0f} tasks/s"
              f"   mean queue {result.summary['queue_jobs_mean']:10.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default=str(Path(__file__).resolve().parents[2] / "shared" / "data"))
    parser.add_argument("--slots", type=int, default=200_000)
    args = parser.parse_args()

    google = Path(args.data) / "google-clusterdata-2011"
    if google.exists():
        kind = workload_kind("trace")
        for beta, label in ((1.0, "Google prefix, traffic x1.0"), (0.625, "Google prefix, traffic x1.6")):
            params = kind.complete({"reader": "google", "path": str(google), "reader_single_resource": True,
                                    "traffic": beta}, "workload")
            jobs = kind.build(np.random.default_rng(0), params, kind.load_shared(params))
            bench(jobs, {"servers": 1000, "capacity": 1.0, "epoch": 0.1, "sample_every": 0.0}, label)
    kind = workload_kind("packing")
    for lo, hi in ((0.01, 0.19), (0.1, 0.9)):
        params = kind.complete({"slots": args.slots, "uniform_lo": lo, "uniform_hi": hi, "intensity": 0.95,
                                "intensity_servers": 5}, "workload")
        jobs = kind.build(np.random.default_rng(1), params, None)
        bench(jobs, {"servers": 5, "capacity": 1.0, "epoch": 1.0, "sample_every": 0.0},
              f"Fig. 4, U[{lo}, {hi}], alpha 0.95")


if __name__ == "__main__":
    main()
