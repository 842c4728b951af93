"""Kernels compiled beside a sweep: a first run on a machine does not wait
for numba.

A sweep whose tasks start in the driver's process (the auto rule's first
tier, `backends`) asks, before its first task, which of the compiled kernels
its configurations run on are missing from numba's on-disk cache
(`cold_units`: a fresh install, a new version of a kernel's source). Those
are compiled by a child process (`Background`, this module run as
``python -m schedlab.platform.execution.precompile ENGINE POLICY...``),
which writes the cache and reports each one as it lands; meanwhile every
simulation whose kernel is not there yet runs on the reference loop, the
same numbers to the bit (`schedlab.sim.common.compiling`, the gate the
engines consult), and the next simulation after a report loads the kernel
from the cache. The rows are those of an all-kernel run.

The reference loop is tens of times slower than a kernel, so it is worth
running only when it finishes the round's work before the compile would
(a small sweep); otherwise it would take CPU from the compile for nothing. So
the runner times the first task run on the reference and, when the round's
remaining work at that rate would outlast the compile (`Background.seconds_left`),
waits for the kernels instead (the progress line says so meanwhile).

The child ignores Ctrl-C and ends with its parent (`children.become_child`);
the sweep stops it (SIGTERM, by its PID) at its end if it is still
compiling: each kernel it finished stays cached, and the next run compiles
only the rest. A pool's or Ray's workers are not gated: they compile or load
a kernel on first use, as always (the auto rule times no task that ran on
the reference because of a compile, so a sweep moves to a pool only once the
kernels are there).
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from schedlab.sim.common import compiling

#: Seconds the sweep's end waits for the stopped child to exit before it kills it.
STOP_SECONDS = 5.0
#: Seconds of CPU one unit's compile is expected to take before one has finished, on an idle
#: machine, numba's one-off set-up included: the queue engine's three took 7.7 s, the batch
#: engine's about 1 s each; the packing kernels are larger (docs/architecture.md, "Compiled fast paths").
COMPILE_UNIT_SECONDS = 3.0
COMPILE_SECONDS = {"packing.fast": 20.0, "packing.multi_fast": 10.0, "batch._fcfs": 1.0, "batch._easy": 1.0}
#: How often a sweep that waits for the kernels looks whether they are there.
POLL_SECONDS = 0.05


@dataclass(frozen=True)
class Unit:
    """One compiled function a policy runs on: its name (``compiling``'s),
    whether the cache holds it, and how to compile or load it."""

    name: str
    cached: Callable[[], bool]
    warm: Callable[[], None]


def unit_of(engine: str, policy: str, params: dict[str, Any] | None = None) -> Unit | None:
    """The compiled function built-in policy ``policy`` of ``engine`` runs on
    with ``params`` (None: it runs on the reference, or the engine has no
    gated kernels: DFRS's kernels are part of its one loop). Imports numba."""
    from schedlab.engines import get_engine

    declared = get_engine(engine)
    found = declared.declared("compiled_unit")
    unit = None if found is None else found(declared.policy(policy), params)
    return None if unit is None else Unit(*unit)


#: Seconds per job-run of the reference loops, the prior `worth_a_child` weighs before any is
#: timed (the queue engine's, in-process on the README sweep: 9.2 us).
REFERENCE_SECONDS_PER_JOB_RUN = 1e-5


def worth_a_child(units: list[str], work_units: int) -> bool:
    """Whether a child should compile ``units`` while the reference loop runs
    the round's ``work_units`` job-runs: yes when that work would take no
    longer on the reference than the compile (`COMPILE_SECONDS`), at the
    priors; otherwise the kernels compile in the driver on first use."""
    compile_seconds = sum(COMPILE_SECONDS.get(u, COMPILE_UNIT_SECONDS) for u in units)
    return work_units * REFERENCE_SECONDS_PER_JOB_RUN <= compile_seconds


def cold_units(engine: str, policies: Iterable[tuple[str, dict[str, Any]]]) -> dict[str, str]:
    """Of the (built-in policy, params) pairs, the compiled functions missing
    from the cache: unit name -> a policy that runs on it."""
    out: dict[str, str] = {}
    for policy, params in policies:
        unit = unit_of(engine, policy, params)
        if unit is not None and unit.name not in out and not unit.cached():
            out[unit.name] = policy
    return out


class Background:
    """The child that compiles ``units`` (unit -> a policy of ``engine`` that
    runs on it), its reports read by a thread into `compiling`."""

    def __init__(self, engine: str, units: dict[str, str]) -> None:
        self.engine, self.units = engine, dict(units)
        self.mine: set[str] = set()  # units this process compiles itself (`wait`)
        self.started = time.monotonic()
        self.ended: float | None = None
        self.left: list[str] = []
        self.waited = 0.0  # seconds the sweep waited for the compile (`wait`)
        compiling.begin(list(units))
        root = str(Path(__file__).resolve().parents[3])  # this schedlab's folder first, as in the driver
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH", "")) if p)}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "schedlab.platform.execution.precompile", engine, *units.values()],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env=env,
        )
        self.reader = threading.Thread(target=self._read, name="schedlab-precompile", daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            words = line.split()
            if len(words) == 3 and words[0] == "compiled":
                compiling.finished(words[1], float(words[2]))
        self.proc.wait()
        self.ended = time.monotonic()
        self.left = compiling.stopped()  # a child that died early: the rest compile on first use

    def seconds_left(self, slowdown: float = 1.0) -> float:
        """Expected seconds of wall until every unit is compiled: each
        unit's expected CPU (`COMPILE_SECONDS`, else `COMPILE_UNIT_SECONDS`)
        x ``slowdown`` (wall per CPU second on this machine now), less the
        time already spent; at least what the units landed so far took."""
        elapsed = time.monotonic() - self.started
        done = compiling.compiled()
        total = sum(COMPILE_SECONDS.get(u, COMPILE_UNIT_SECONDS) for u in self.units) * slowdown
        if done and len(done) < len(self.units):
            total = max(total, elapsed * len(self.units) / len(done))
        return max(total - elapsed, 0.0)

    def wait(self) -> None:
        """Until every unit is compiled (or the child is gone). Meanwhile this
        process compiles the pending units from the last one backwards (the
        child takes them from the first, and skips those it finds cached), so
        that both cores compile: all but the one the child is on."""
        t0 = time.monotonic()
        while compiling.compiling() and self.proc.poll() is None:
            order = [u for u in self.units if compiling.is_pending(u) and u not in self.mine]
            if len(order) < 2:
                time.sleep(POLL_SECONDS)
                continue
            unit = order[-1]
            self.mine.add(unit)
            found = unit_of(self.engine, self.units[unit])
            started = time.perf_counter()
            if found is not None:
                found.warm()  # writes the cache as the child would, and loads it here
            compiling.finished(unit, time.perf_counter() - started)
        self.waited += time.monotonic() - t0
        if self.proc.poll() is not None:
            self.reader.join(STOP_SECONDS)  # its last reports read, the rest released

    def stop(self) -> None:
        """End the child if it is still compiling (its PID: SIGTERM, then
        SIGKILL after `STOP_SECONDS`), and its reader."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(STOP_SECONDS)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.reader.join(STOP_SECONDS)

    def line(self, simulations: int) -> str:
        """What the summary line says: what was compiled, in how long, and
        which loop ran the simulations meanwhile."""
        done = compiling.compiled()
        ran = compiling.reference_runs()
        meanwhile = f"{ran} of {simulations} simulations ran on the reference loop meanwhile"
        if self.waited:
            meanwhile += f", then the sweep waited {self.waited:.1f} s for the kernels"
        if self.left:
            return (
                f"kernels: {len(done)} of {len(self.units)} compiled beside the sweep, the rest stopped at its "
                f"end (the next run compiles them); {meanwhile}"
            )
        seconds = (self.ended or time.monotonic()) - self.started
        return f"kernels: {len(done)} compiled beside the sweep in {seconds:.1f} s; {meanwhile}"


def main(argv: list[str]) -> None:
    """The child: compile the kernels of ``argv`` (engine, then one policy
    per unit) into the on-disk cache, one line ``compiled UNIT SECONDS`` each."""
    from schedlab.platform.children import become_child

    become_child()
    engine, *policies = argv
    for policy in policies:
        unit = unit_of(engine, policy)
        if unit is None or unit.cached():  # the parent compiled it meanwhile (`Background.wait`)
            continue
        t0 = time.perf_counter()
        unit.warm()
        print(f"compiled {unit.name} {time.perf_counter() - t0:.3f}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
