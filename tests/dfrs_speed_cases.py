"""Fixed DFRS instances and a bit-exact digest of their schedules, shared by
tests/test_dfrs_speed.py and the script that pinned the digests
(``python -m tests.dfrs_speed_cases --record``, run on the base commit
3aa6bc9 / with the frozen reference copy ``tests.dfrs_reference``).

A digest covers everything a run produces: at every event instant the time,
every job's virtual time, status, penalty end and yield (the engine's
snapshots), the usage profile, the per-job table of ``run_table`` (start,
end, stretch, pauses, migrations, migrated tasks, memory moved) and every
summary value except the wall times. Floats are hashed by their IEEE bytes,
so equal digests mean bit-identical schedules (NaN included)."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import numpy as np

DIGESTS = Path(__file__).with_name("dfrs_speed_digests.json")
NODES = 128
#: (label, njobs, seed): Lublin traces as benchmarks/batch_dfrs.py builds them (512 procs, 4 per node,
#: memory U[0.05, 0.5], load 0.7), smaller.
TRACES = [("lublin200s1", 200, 1), ("lublin250s2", 250, 2), ("lublin300s3", 300, 3)]
POLICIES = [
    "GreedyPM*/per/OPT=MIN/MINVT=600",
    "MCB8*/per/OPT=MIN/MINVT=600",
    "Greedy*/OPT=MIN",
    "GreedyP*/OPT=AVG",
    "GreedyPM*/OPT=MIN",
    "GreedyP*/per/OPT=AVG/MINFT=300",
    "MCB8*/OPT=MIN",
]
#: /stretch-per is slow in the reference: smaller traces.
STRETCH_TRACES = [("lublin150s1", 150, 1), ("lublin120s2", 120, 2)]
STRETCH_POLICIES = ["GreedyPM*/stretch-per/OPT=MAX/MINVT=600", "MCB8*/stretch-per/OPT=AVG"]
SKIP_SUMMARY = {"sim_seconds", "bound_seconds"}


def blas_kernel() -> str:
    """The BLAS kernel numpy runs on (OpenBLAS's core type, e.g. "SkylakeX" or
    "Haswell"; ``OPENBLAS_CORETYPE`` forces one). The DFRS allocations call
    BLAS (dgemv, dot), whose kernels sum in different orders (FMA, vector
    width), so the schedules' last bits, and the digests, are pinned per
    kernel: the frozen reference gives the same bits as the engine on any one
    kernel, not across kernels."""
    from threadpoolctl import threadpool_info

    for lib in threadpool_info():
        if lib.get("internal_api") == "openblas":
            return str(lib.get("architecture"))
    return "+".join(sorted(str(lib.get("internal_api")) for lib in threadpool_info() if lib.get("user_api") == "blas"))


def lublin(njobs: int, seed: int):
    from schedlab.workloads.registry import workload_kind

    kind = workload_kind("lublin")
    p = kind.complete(
        {
            "njobs": njobs,
            "nodes": 512,
            "load": 0.7,
            "cores_per_node": 4,
            "memory": "uniform",
            "memory_lo": 0.05,
            "memory_hi": 0.5,
        },
        "test",
    )
    kind.check(p)
    shared = kind.load_shared(p) if kind.load_shared else None
    return kind.build(np.random.default_rng(np.random.SeedSequence(seed)), p, shared)


def _arr(h, x) -> None:
    a = np.ascontiguousarray(np.asarray(x))
    if a.dtype == object:
        a = a.astype(float)
    h.update(str(a.dtype).encode() + str(a.shape).encode())
    h.update(a.tobytes())


def digest_run(sim_module, run_table, policy_cls, jobs, nodes: int = NODES, **params) -> str:
    """sha256 over the snapshots and profile of ``sim_module.simulate_dfrs``
    and the output of ``run_table`` (see the module docstring)."""
    h = hashlib.sha256()
    submit = jobs["submit"].to_numpy().astype(float)
    runtime = jobs["runtime"].to_numpy().astype(float)
    procs = jobs["procs"].to_numpy().astype(np.int64)
    cpu = jobs["cpu_need"].to_numpy().astype(float)
    mem = jobs["memory"].to_numpy().astype(float)
    res = sim_module.simulate_dfrs(submit, runtime, procs, cpu, mem, nodes, policy_cls(**params), snapshots=True)
    h.update(f"events={res.events} lp={res.lp_failures} n={len(res.snapshots)}".encode())
    for t, vt, status, pen, y in res.snapshots:
        _arr(h, np.float64(t))
        _arr(h, vt)
        _arr(h, np.asarray(status, dtype=np.int64))
        _arr(h, pen)
        _arr(h, y)
    for a in (res.profile.times, res.profile.demand, res.profile.allocated):
        _arr(h, a)
    per_job, summary = run_table(jobs, policy_cls, nodes=nodes, **params)
    for k in sorted(per_job):
        h.update(k.encode())
        _arr(h, per_job[k])
    for k in sorted(summary):
        if k not in SKIP_SUMMARY:
            h.update(k.encode())
            _arr(h, np.float64(summary[k]))
    return h.hexdigest()


def cases():
    for label, n, seed in TRACES:
        for pol in POLICIES:
            yield label, n, seed, pol
    for label, n, seed in STRETCH_TRACES:
        for pol in STRETCH_POLICIES:
            yield label, n, seed, pol


def record() -> None:
    import time

    from tests import dfrs_reference
    from tests.dfrs_reference import dfrs as ref_dfrs

    out = {}
    for label, n, seed, pol in cases():
        jobs = lublin(n, seed)
        t = time.perf_counter()
        out[f"{label}|{pol}"] = digest_run(ref_dfrs, ref_dfrs.run_table, dfrs_reference.REF_POLICIES[pol], jobs)
        print(f"{label} {pol} {time.perf_counter() - t:.1f} s", flush=True)
    pinned = json.loads(DIGESTS.read_text()) if DIGESTS.exists() else {}
    pinned[blas_kernel()] = out
    DIGESTS.write_text(json.dumps(pinned, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__" and "--record" in sys.argv:
    record()
