"""A bigger cluster, simulated here (issue 42): a sweep over N raylets on
127.0.0.1 (logical CPUs) that lose a raylet every K seconds throughout, and
the proof that every row landed exactly once, bit-identical to a one-process
run (a benchmark: prints figures and the checks' verdict; exit code 1 when a
check fails).

The cluster is a head with no CPUs (never killed: the driver attaches to it)
and N raylets of ``--cpus`` logical CPUs each, started with `ray start` as
`tests/test_platform_cluster.py` does (private temp dir, free ports, token
auth, loopback only). The sweep is C configurations: FIFO and PS on C / 2
synthetic workload points (a load x sigma grid) of 50 jobs, one replication,
no tracking, ``[execution]`` left at its defaults (Ray's retries: 3), run by
``schedlab run SPEC --address``. Every K seconds a raylet picked at random
(``--seed``) loses every process of its session to SIGKILL (by PID: the
raylet, its agents, its workers), and a replacement joins with `ray start
--address` (again until one comes up: under load Ray's raylet may abort
waiting for its dashboard agent, ray-project/ray#65983); at most half the
raylets are down or starting at once (a tick beyond that kills nothing and
is counted). When the sweep ends, the cluster is
torn down (its own sessions killed, its temp dir removed: never `ray stop`)
and the same spec runs in one process (backend "local", one CPU). Checked:
the Ray run's exit code 0, one row per configuration (no key twice, none
missing, no failure record), and the two frames sorted by key equal bit for
bit without ``sim_seconds`` (the simulation's wall-clock time: the only
column that legitimately differs; the rows name no host or node).

Printed: configurations, raylets, kills, restarts, the mean interval between
kills, ticks that killed nothing, the sweep's wall, the retries Ray reported to the driver (the
driver itself retries nothing: Ray does, ``max_retries``), rows, the checks.
The machine has 2 real cores: read the figures with the load printed.

    python benchmarks/ray_chaos.py [--raylets 8] [--configs 100000] [--every 20] [--seed 1] [--cpus 2]
    python benchmarks/ray_chaos.py --quick        # 4 raylets, 4,000 configurations, a kill every 20 s
"""

from __future__ import annotations

import argparse
import signal
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.chaos import VARYING, env_note, run_chaos  # noqa: E402

#: Failed restart attempts printed (their count is always printed).
ERRORS_SHOWN = 5
#: ``--quick``: a few minutes on the loaded 2-core machine (most of it `ray start`s).
QUICK = {"raylets": 4, "configs": 4_000, "every": 20.0}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--raylets", type=int, default=8, help="raylets besides the head (default 8)")
    parser.add_argument("--cpus", type=int, default=2, help="logical CPUs of each raylet (default 2)")
    parser.add_argument("--configs", type=int, default=100_000, help="configurations, an even number (default 1e5)")
    parser.add_argument("--every", type=float, default=20.0, help="seconds between kills (default 20)")
    parser.add_argument("--seed", type=int, default=1, help="the spec's seed and the kills' (default 1)")
    parser.add_argument("--timeout", type=float, default=4 * 3600, help="seconds each run may take")
    parser.add_argument("--quick", action="store_true", help="4 raylets, 4,000 configurations, a kill every 20 s")
    parser.add_argument("--work", type=Path, help="where the logs and results go (default: a new temp dir)")
    args = parser.parse_args()
    # Ctrl-C and SIGTERM end the run through its clean-up (the cluster's sessions killed, its temp
    # dir removed), also when started in the background, where SIGINT comes ignored.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    if args.quick:
        vars(args).update(QUICK)
    work = args.work or Path(tempfile.mkdtemp(prefix="slchaos-bench-"))
    print(
        f"machine: {env_note()}; {args.raylets} raylets x {args.cpus} logical CPUs + a head without CPUs; "
        f"{args.configs:,} configurations (FIFO, PS; 50 jobs; 1 replication); a kill every {args.every:g} s; "
        f"seed {args.seed}; logs and results under {work}",
        flush=True,
    )
    t = time.monotonic()
    out = run_chaos(
        work,
        configs=args.configs,
        raylets=args.raylets,
        cpus=args.cpus,
        every=args.every,
        seed=args.seed,
        timeout=args.timeout,
    )
    rows = [
        ("configurations", f"{out.configs:,}"),
        ("raylets", out.raylets),
        ("kills", out.kills),
        ("restarts", f"{out.restarts} ({len(out.restart_errors)} attempts failed and were made again)"),
        ("mean seconds between kills", f"{out.interval:.1f}"),
        ("ticks that killed nothing (half the raylets down)", out.deferred),
        ("sweep wall", f"{out.sweep_wall:.1f} s"),
        ("one-process wall", f"{out.reference_wall:.1f} s"),
        ("retries (Ray's, reported to the driver)", out.ray_retries),
        ("rows", f"{out.rows:,}"),
        ("keys twice / missing / failure records", f"{out.duplicates} / {out.missing} / {out.failures}"),
        (f"identical to the one-process run (without {', '.join(VARYING)})", "yes" if out.identical else "no"),
        ("schedlab run exit code", out.returncode),
        ("total wall (cluster start-up and teardown included)", f"{time.monotonic() - t:.0f} s"),
        ("load average after", env_note()),
    ]
    width = max(len(k) for k, _ in rows)
    for key, value in rows:
        print(f"{key:<{width}}  {value}")
    print(f"sweep: {out.summary}")
    for err in out.restart_errors[:ERRORS_SHOWN]:
        print(f"restart attempt failed: {err}")
    print("OK: every row exactly once, bit-identical" if out.ok else "CHECK FAILED")
    sys.exit(0 if out.ok else 1)


if __name__ == "__main__":
    main()
