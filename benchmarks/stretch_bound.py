"""Speed of the max-stretch lower bound (DFRS paper, Theorem 1): the exact
max-flow method (default) vs the LP reference, on one 1000-job Lublin trace
(the DFRS paper's synthetic setting, as in ``benchmarks/batch_dfrs.py``:
512 processors packed four per node onto 128 quad-core nodes, offered load 0.7).

Prints each method's wall time (best of ``--repeat`` for the max flow, one
LP run: ~20 s), the two bounds and their relative difference, the exact
S* and the speed ratio. The first max-flow run of a machine compiles the
numba kernels (cached on disk afterwards); it is timed separately.

Usage: python benchmarks/stretch_bound.py [--repeat 5] [--njobs 1000] [--seed 1] [--skip-lp]
"""

from __future__ import annotations

import argparse
import time

from schedlab.sim.bound.stretch_bound import _BOUND_MEMO, max_stretch_lower_bound, max_stretch_lower_bound_exact


def lublin(njobs: int, seed: int):
    from batch_dfrs import build  # same instance as benchmarks/batch_dfrs.py

    return build(
        "lublin",
        {
            "njobs": njobs,
            "nodes": 512,
            "load": 0.7,
            "cores_per_node": 4,
            "memory": "uniform",
            "memory_lo": 0.05,
            "memory_hi": 0.5,
        },
        seed,
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--njobs", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--skip-lp", action="store_true", help="leave out the LP reference (~20 s)")
    args = ap.parse_args()
    jobs = lublin(args.njobs, args.seed)
    arrays = (
        jobs["submit"].to_numpy(),
        jobs["runtime"].to_numpy(),
        jobs["procs"].to_numpy(),
        jobs["cpu_need"].to_numpy(),
        128.0,
    )
    print(f"Lublin, {args.njobs} jobs (seed {args.seed}), 128 quad-core nodes, load 0.7")

    def timed(method: str) -> tuple[float, float]:
        _BOUND_MEMO.clear()
        t = time.perf_counter()
        value = max_stretch_lower_bound(*arrays, method=method)
        return time.perf_counter() - t, value

    first, _ = timed("flow")  # numba kernels: compiled or loaded from the on-disk cache
    runs = [timed("flow") for _ in range(args.repeat)]
    flow_s, flow = min(runs)
    print(f"  max flow (default)   first call {first:6.3f} s, best of {args.repeat} {flow_s:6.3f} s  bound {flow!r}")
    exact = max_stretch_lower_bound_exact(*arrays)
    print(f"  exact S* (max_stretch_lower_bound_exact)                    {exact!r}")
    if args.skip_lp:
        return
    lp_s, lp = timed("lp")
    print(f"  LP reference (HiGHS)                         {lp_s:6.3f} s  bound {lp!r}")
    print(f"  relative difference {abs(flow - lp) / lp:.2e}; speed-up x{lp_s / flow_s:.0f}")


if __name__ == "__main__":
    main()
