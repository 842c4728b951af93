"""The Lublin & Feitelson (2003) model of rigid parallel jobs.

U. Lublin and D. G. Feitelson, "The workload on parallel supercomputers:
modeling the characteristics of rigid jobs", J. Parallel Distrib. Comput.
63(11):1105-1122, 2003.

Source of the algorithm and of every default parameter: the authors' C
program `m_lublin99.c` (Uri Lublin and Dror Feitelson, Hebrew University),
distributed by the Parallel Workloads Archive at
http://www.cs.huji.ac.il/labs/parallel/workload/m_lublin99/m_lublin99.c (we
read a public copy of the SWF-output version: SIZE 50000, START 0,
CYCLIC_DAY_START 11, 48 buckets; the same constants appear in the Cython
wrapper github:renatolfc/parallelworkloads, which `cdef extern`s that file).
This module is an independent numpy re-implementation; no C code is used.
The output was checked against `lublin_256.swf.gz` (10,000 jobs the C
program produced for a 256-node machine, from github:DIR-LAB/deep-batch-
scheduler, see shared/data/lublin/PROVENANCE.md) in tests/test_lublin.py.

The model, per job class (batch, interactive, or the single "untyped" class
fitted to whole logs):

* Size. With probability `serial_prob` the job is serial (1 node). Otherwise
  x = log2(size) is drawn from a two-stage uniform: U(u_low, u_med) with
  probability `u_prob`, else U(u_med, u_hi). With probability `pow2_prob`
  (of all jobs) x is rounded to the nearest integer (a power-of-two job).
  The size is round(2**x).
* Run time. log(runtime) is hyper-gamma: Gamma(a1, scale b1) with
  probability p, else Gamma(a2, scale b2), where p = pa * size + pb clipped
  to [0, 1]. Note: p is linear in the number of nodes itself, not in its
  log2 (as in the C code, and as the reference file confirms: its serial
  jobs have mean log run time 5.17 and its 128-256-node jobs 9.11, what
  this rule predicts). Draws with log(runtime) > `max_log_runtime` (12,
  about 1.9 days) are redrawn, mixture choice included.
* Arrivals. A renewal process whose gaps are exp(g), g ~ Gamma(aarr * arar,
  scale barr), redrawn while g > `max_log_interarrival` (13, ~5 days), runs
  on a "model clock" that ticks at a time-of-day dependent rate: the day is
  cut into 48 half-hour buckets, bucket k gets weight w_k (mean 1, below)
  and spends w_k * 1800 model seconds in its 1800 real seconds. Busy buckets
  thus get proportionally more arrivals. The C code implements this by
  "paying points" bucket by bucket with fractional remainders; that is
  exactly this time change, which we invert in closed form (vectorised).
  Bucket weights: for i = c, c+1, ..., c+47 (c = `cyclic_day_start` = 11),
  bucket (i - 1) mod 48 gets G(i + 0.5) - G(i - 0.5), G the CDF of
  Gamma(anum, scale bnum) in bucket units; then all weights are divided by
  their mean. See `daily_cycle_weights`.
* Job types. With `job_types=True` (the C code's INCLUDE_JOBS_TYPE 1, our
  default) batch and interactive jobs arrive by two independent processes
  with their own parameters, and the merged stream is cut at `njobs` jobs
  (on a tie the interactive job comes first, as in C). With
  `job_types=False` one process with the "untyped" parameters is used and
  job_type is "untyped" (the C program labels those jobs interactive, queue
  0 in SWF).

Machine size. The C program has the machine size built into UHI (log2 of
the largest job, 7 = 128 nodes in its constants). Here `nodes` is an
argument: u_hi = log2(nodes) - u_hi_offset and u_med = log2(nodes) -
u_med_offset, with offsets chosen so that nodes=128 gives exactly the C
constants (batch: UMED 5, UHI 7; interactive: UMED 3, UHI 5.5; untyped:
UMED 4.5, UHI 7). The C code's own advice is UMed = UHi - 2.5 (1.5 to 3.5)
and UHi = log2(system size); the 256-node reference file shows exactly
untyped u_med = 5.5, u_hi = 8. `u_low` is absolute (the smallest parallel
job). On small machines the stages are clamped so 0 <= u_low <= u_med <=
u_hi (u_hi is raised to 0 and u_low lowered to u_hi if needed), and a power-of-two job rounded above
`nodes` (possible when log2(nodes) is not an integer) becomes the largest
power of two <= nodes, so 1 <= procs <= nodes always.

Output conventions (differences from the C program's output):

* Times are continuous. The C program prints run times and arrival times
  truncated to whole seconds (its clock is an unsigned long); apply floor()
  to reproduce that. Run times are >= 1 s (exp of a non-negative number).
* submit is seconds since the start of the simulation, which is
  `start_hour` o'clock (0: midnight, as in the C code's START) in the
  model's daily cycle. The first job arrives at the model's first arrival
  (one inter-arrival gap after time 0), not at 0, as in the C program.
* The model has no user runtime estimates: requested_time = runtime
  (a perfect estimate). Add an estimate model (e.g. Tsafrir 2005) if needed.
* size = runtime (the queue engine's view of a job's length; procs is a
  separate column). There is no user column.

Random streams: `rng` is split with `rng.spawn(4)` into, in this order,
batch arrivals, interactive arrivals (untyped arrivals use the first),
sizes and run times; so for the same seed, changing run-time parameters
leaves submit, job_type and procs bit-identical. Reproduce a workload by
building a fresh generator from the same seed.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from numbers import Integral, Real

import numpy as np
import polars as pl
from scipy.special import gammainc

from schedlab.errors import UserError

BUCKETS = 48  # half-hour buckets per day (C: BUCKETS)
SECONDS_IN_BUCKET = 86_400 / BUCKETS
JOB_TYPES = ("batch", "interactive", "untyped")

LUBLIN_COLUMNS = ("job_id", "submit", "runtime", "procs", "requested_time", "job_type", "size")
LUBLIN_SCHEMA: dict[str, pl.DataType] = {
    "job_id": pl.Int64(),
    "submit": pl.Float64(),
    "runtime": pl.Float64(),
    "procs": pl.Int64(),
    "requested_time": pl.Float64(),
    "job_type": pl.Utf8(),
    "size": pl.Float64(),
}


@dataclass(frozen=True)
class LublinClassParams:
    """The model's parameters for one job class (batch, interactive or untyped).

    Size (number of nodes):
      serial_prob: probability of a serial (1-node) job (C: SERIAL_PROB*).
      pow2_prob: probability of a power-of-two parallel job (C: POW2_PROB*);
        serial_prob + pow2_prob <= 1.
      u_low: log2 of the smallest parallel job, lower end of the first
        uniform stage (C: ULOW*).
      u_med_offset: u_med = log2(nodes) - u_med_offset, the point where the
        two uniform stages meet (C: UHI - UMED at the C code's 128 nodes).
      u_hi_offset: u_hi = log2(nodes) - u_hi_offset, upper end of the second
        stage (C: 7 - UHI*); 0 lets jobs span the whole machine.
      u_prob: probability of the first stage U(u_low, u_med) (C: UPROB*).
    Run time (log seconds is hyper-gamma; shapes a*, scales b*):
      a1, b1: the first gamma (C: A1*, B1*); a2, b2: the second (A2*, B2*).
      pa, pb: the first gamma's probability is pa * nodes + pb, clipped to
        [0, 1] (C: PA*, PB*).
    Arrivals:
      aarr, barr: log inter-arrival time is Gamma(aarr * arar, scale barr)
        on the model clock (C: AARR*, BARR*).
      arar: ratio rescaling the rush-hour shape aarr to all hours (C: ARAR*).
      anum, bnum: shape and scale (in half-hour buckets) of the gamma whose
        CDF sets the daily cycle's bucket weights (C: ANUM*, BNUM*).
    """

    serial_prob: float
    pow2_prob: float
    u_low: float
    u_med_offset: float
    u_hi_offset: float
    u_prob: float
    a1: float
    b1: float
    a2: float
    b2: float
    pa: float
    pb: float
    aarr: float
    barr: float
    anum: float
    bnum: float
    arar: float


# m_lublin99.c, *_BATCH constants (UMED 5, UHI 7: offsets 2 and 0).
BATCH_DEFAULTS = LublinClassParams(
    serial_prob=0.2927,
    pow2_prob=0.6686,
    u_low=1.2,
    u_med_offset=2.0,
    u_hi_offset=0.0,
    u_prob=0.875,
    a1=6.57,
    b1=0.823,
    a2=639.1,
    b2=0.0156,
    pa=-0.003,
    pb=0.6986,
    aarr=6.0415,
    barr=0.8531,
    anum=6.1271,
    bnum=5.2740,
    arar=1.0519,
)
# m_lublin99.c, *_ACTIVE constants (UMED 3, UHI 5.5: offsets 4 and 1.5).
INTERACTIVE_DEFAULTS = LublinClassParams(
    serial_prob=0.1541,
    pow2_prob=0.625,
    u_low=1.0,
    u_med_offset=4.0,
    u_hi_offset=1.5,
    u_prob=0.705,
    a1=3.8351,
    b1=0.6605,
    a2=7.073,
    b2=0.6856,
    pa=-0.0118,
    pb=0.9156,
    aarr=6.5510,
    barr=0.6621,
    anum=8.9186,
    bnum=3.6680,
    arar=0.9797,
)
# m_lublin99.c, the typeless constants (UMED 4.5, UHI 7: offsets 2.5 and 0).
UNTYPED_DEFAULTS = LublinClassParams(
    serial_prob=0.244,
    pow2_prob=0.576,
    u_low=0.8,
    u_med_offset=2.5,
    u_hi_offset=0.0,
    u_prob=0.86,
    a1=4.2,
    b1=0.94,
    a2=312.0,
    b2=0.03,
    pa=-0.0054,
    pb=0.78,
    aarr=10.2303,
    barr=0.4871,
    anum=8.1737,
    bnum=3.9631,
    arar=1.0225,
)


@dataclass(frozen=True)
class LublinParams:
    """Every parameter of the Lublin-Feitelson model, with the C code's defaults.

    job_types: True (C: INCLUDE_JOBS_TYPE 1): separate batch and interactive
      streams with `batch` and `interactive` parameters. False: one stream
      with the `untyped` parameters (what RLScheduler's lublin_256 used).
    batch, interactive, untyped: per-class parameters (`LublinClassParams`).
    start_hour: hour of day (0-23) at simulated time 0 (C: START = 0).
    cyclic_day_start: first bucket index i of the daily-cycle gamma, in
      half-hour buckets, 1..48 (C: CYCLIC_DAY_START = 11).
    max_log_runtime: log run times above this are redrawn (C: TOO_MUCH_TIME
      = 12, i.e. run times <= e^12 s = 162,754 s).
    max_log_interarrival: log inter-arrival gaps above this are redrawn
      (C: TOO_MUCH_ARRIVE_TIME = 13, i.e. gaps <= e^13 s on the model clock).
    """

    job_types: bool = True
    batch: LublinClassParams = field(default_factory=lambda: BATCH_DEFAULTS)
    interactive: LublinClassParams = field(default_factory=lambda: INTERACTIVE_DEFAULTS)
    untyped: LublinClassParams = field(default_factory=lambda: UNTYPED_DEFAULTS)
    start_hour: int = 0
    cyclic_day_start: int = 11
    max_log_runtime: float = 12.0
    max_log_interarrival: float = 13.0


# At most this many redraw rounds for the truncated distributions; each round
# redraws only the rejected values, and with sane caps one or two suffice.
_MAX_REDRAW_ROUNDS = 1000


def lublin_workload(
    rng: np.random.Generator,
    *,
    njobs: int = 10_000,
    nodes: int = 256,
    params: LublinParams | None = None,
) -> pl.DataFrame:
    """Generate `njobs` jobs of the Lublin-Feitelson model for a `nodes`-node machine.

    Returns a polars DataFrame with `LUBLIN_COLUMNS` (`LUBLIN_SCHEMA` dtypes),
    sorted by submit: job_id (0..njobs-1), submit (s since the start, first
    job at the model's first arrival > 0), runtime (s, >= 1), procs
    (1..nodes), requested_time (= runtime: the model has no estimates),
    job_type ("batch"/"interactive", or "untyped" with job_types=False) and
    size (= runtime). See the module docstring for the model and conventions.
    """
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    if params is None:
        params = LublinParams()
    check_params(njobs=njobs, nodes=nodes, params=params)
    njobs, nodes = int(njobs), int(nodes)
    arr_batch_rng, arr_inter_rng, size_rng, time_rng = rng.spawn(4)

    if params.job_types:
        classes: tuple[LublinClassParams, ...] = (params.batch, params.interactive)
        t_batch = _arrivals(arr_batch_rng, njobs, params.batch, params, "batch")
        t_inter = _arrivals(arr_inter_rng, njobs, params.interactive, params, "interactive")
        times = np.concatenate((t_batch, t_inter))
        kind = np.concatenate((np.zeros(njobs, np.int8), np.ones(njobs, np.int8)))  # 0 batch, 1 interactive
        # C takes batch only if strictly earlier: on a tie, interactive first.
        order = np.lexsort((-kind, times))[:njobs]
        submit, kind = times[order], kind[order]
        labels = np.array(["batch", "interactive"])[kind]
    else:
        classes = (params.untyped,)
        submit = _arrivals(arr_batch_rng, njobs, params.untyped, params, "untyped")
        kind = np.zeros(njobs, np.int8)
        labels = np.full(njobs, "untyped")

    procs = np.empty(njobs, np.int64)
    runtime = np.empty(njobs)
    for k, cls in enumerate(classes):
        mask = kind == k
        procs[mask] = _sizes(size_rng, int(mask.sum()), cls, nodes)
    for k, cls in enumerate(classes):
        mask = kind == k
        runtime[mask] = _runtimes(time_rng, procs[mask], cls, params.max_log_runtime)

    return pl.DataFrame(
        {
            "job_id": np.arange(njobs, dtype=np.int64),
            "submit": submit,
            "runtime": runtime,
            "procs": procs,
            "requested_time": runtime,
            "job_type": labels,
            "size": runtime,
        },
        schema=LUBLIN_SCHEMA,
    )


def daily_cycle_weights(cls: LublinClassParams, cyclic_day_start: int = 11) -> np.ndarray:
    """The 48 half-hour bucket weights of the daily cycle (bucket 0 = 00:00-00:30), mean 1.

    The arrival rate in bucket k is proportional to weight k (over a long
    run, the share of arrivals in bucket k tends to weight k / 48).
    """
    i = cyclic_day_start + (np.arange(BUCKETS) + 1 - cyclic_day_start) % BUCKETS
    w = gammainc(cls.anum, (i + 0.5) / cls.bnum) - gammainc(cls.anum, (i - 0.5) / cls.bnum)
    return w / w.mean()


def _arrivals(rng: np.random.Generator, n: int, cls: LublinClassParams, params: LublinParams, name: str) -> np.ndarray:
    """The first n arrival times of one class's process, in real seconds since the start."""
    log_gap = _truncated(
        lambda m: rng.gamma(cls.aarr * cls.arar, cls.barr, m),
        n,
        params.max_log_interarrival,
        f"params.{name}.aarr/barr or params.max_log_interarrival",
    )
    tau = np.cumsum(_each(math.exp, log_gap))  # model-clock arrival times, s

    # Real time t maps to model time W(t) = integral of the bucket weights; W
    # grows by exactly one day per day (weights have mean 1). Invert it.
    w = daily_cycle_weights(cls, params.cyclic_day_start)
    w = np.roll(w, -2 * params.start_hour)  # bucket 0 = the one at time 0
    cum = np.concatenate(([0.0], np.cumsum(w) * SECONDS_IN_BUCKET))
    cum[-1] = 86_400.0
    day, tau_in_day = np.divmod(tau, 86_400.0)
    k = np.searchsorted(cum, tau_in_day, side="right") - 1  # cum[k] <= tau < cum[k+1], w[k] > 0
    k = np.minimum(k, BUCKETS - 1)
    return day * 86_400.0 + k * SECONDS_IN_BUCKET + (tau_in_day - cum[k]) / w[k]


def _sizes(rng: np.random.Generator, n: int, cls: LublinClassParams, nodes: int) -> np.ndarray:
    """Number of nodes of n jobs: serial, power-of-two, or two-stage log-uniform."""
    top = math.log2(nodes)
    u_hi = max(top - cls.u_hi_offset, 0.0)
    u_low = min(cls.u_low, u_hi)
    u_med = min(max(top - cls.u_med_offset, u_low), u_hi)
    u, stage, x = rng.random((3, n))
    first = stage <= cls.u_prob
    par = np.where(first, u_low + x * (u_med - u_low), u_med + x * (u_hi - u_med))
    pow2 = u <= cls.serial_prob + cls.pow2_prob
    par = np.where(pow2, np.floor(par + 0.5), par)
    procs = np.floor(_each(math.exp2, par) + 0.5).astype(np.int64)
    too_big = procs > nodes
    if too_big.any():
        largest_pow2 = 1 << (nodes.bit_length() - 1)
        procs[too_big] = np.where(pow2[too_big], largest_pow2, nodes)
    procs[u <= cls.serial_prob] = 1
    return procs


def _runtimes(
    rng: np.random.Generator, procs: np.ndarray, cls: LublinClassParams, max_log_runtime: float
) -> np.ndarray:
    """Run times (s) of jobs with these sizes: exp(hyper-gamma), p linear in the node count."""
    p = np.clip(cls.pa * procs + cls.pb, 0.0, 1.0)

    def draw(idx: np.ndarray) -> np.ndarray:
        first = rng.random(idx.size) <= p[idx]
        return np.where(first, rng.gamma(cls.a1, cls.b1, idx.size), rng.gamma(cls.a2, cls.b2, idx.size))

    log_rt = _truncated(draw, procs.size, max_log_runtime, "params.max_log_runtime", indexed=True)
    return _each(math.exp, log_rt)


def _each(fn: Callable[[float], float], x: np.ndarray) -> np.ndarray:
    """``fn`` (``math.exp``, ``math.exp2``) of each element of the 1-d float
    array ``x``, one C library call per element.

    Why not ``np.exp`` / ``np.exp2``: numpy evaluates them with SIMD code of
    its own on CPUs with AVX-512 (its own float64 exp; Intel's SVML for
    exp2) and calls the C library elsewhere, and the two differ in the last
    bit for some arguments -- so on an AVX-512 machine the same seed could
    give run times and arrival times other in their last bits than on any
    other. The C library's
    function is the one numpy calls on every other CPU, so on those the
    workload keeps its bits. Cost: about 65 ns per job and call (three calls
    per job), against 5-8 ns for numpy's vector loop. The C library's own
    last bits can still depend on the CPU (docs/architecture.md, "Bits
    across CPUs")."""
    return np.fromiter(map(fn, x.tolist()), dtype=np.float64, count=x.size)


def _truncated(draw, n: int, cap: float, culprit: str, indexed: bool = False) -> np.ndarray:
    """n draws, redrawing (only) those above cap, as the C code's do-while loops do."""
    idx = np.arange(n)
    out = draw(idx) if indexed else draw(n)
    bad = np.flatnonzero(out > cap)
    for _ in range(_MAX_REDRAW_ROUNDS):
        if bad.size == 0:
            return out
        out[bad] = draw(bad) if indexed else draw(bad.size)
        bad = bad[out[bad] > cap]
    raise UserError(f"{culprit}: almost every draw exceeds the cap {cap}; raise the cap or lower the distribution")


def check_params(*, njobs, nodes, params) -> None:
    """Raise UserError naming the first bad argument or parameter."""
    _check_int("njobs", njobs)
    _check_int("nodes", nodes)
    if not isinstance(params, LublinParams):
        raise UserError(f"params: must be a LublinParams; got {type(params).__name__}")
    if not isinstance(params.job_types, bool):
        raise UserError(f"params.job_types: must be True or False; got {params.job_types!r}")
    start = params.start_hour
    if isinstance(start, bool) or not isinstance(start, Integral) or not 0 <= start <= 23:
        raise UserError(f"params.start_hour: must be an integer in 0..23; got {start!r}")
    cds = params.cyclic_day_start
    if isinstance(cds, bool) or not isinstance(cds, Integral) or not 1 <= cds <= BUCKETS:
        raise UserError(f"params.cyclic_day_start: must be an integer in 1..{BUCKETS}; got {cds!r}")
    _check_real("params.max_log_runtime", params.max_log_runtime, lambda v: v > 0, "a number > 0")
    _check_real("params.max_log_interarrival", params.max_log_interarrival, lambda v: v > 0, "a number > 0")
    for name in ("batch", "interactive") if params.job_types else ("untyped",):
        _check_class(f"params.{name}", getattr(params, name), params.cyclic_day_start)


def _check_class(where: str, cls, cyclic_day_start: int) -> None:
    if not isinstance(cls, LublinClassParams):
        raise UserError(f"{where}: must be a LublinClassParams; got {type(cls).__name__}")
    unit = (lambda v: 0 <= v <= 1, "a probability in [0, 1]")
    positive = (lambda v: v > 0, "a number > 0")
    nonneg = (lambda v: v >= 0, "a number >= 0")
    anything = (lambda v: True, "a finite number")
    rules = {
        "serial_prob": unit,
        "pow2_prob": unit,
        "u_prob": unit,
        "u_low": nonneg,
        "u_med_offset": nonneg,
        "u_hi_offset": nonneg,
        "a1": positive,
        "b1": positive,
        "a2": positive,
        "b2": positive,
        "pa": anything,
        "pb": anything,
        "aarr": positive,
        "barr": positive,
        "anum": positive,
        "bnum": positive,
        "arar": positive,
    }
    for f in fields(cls):
        ok, rule = rules[f.name]
        _check_real(f"{where}.{f.name}", getattr(cls, f.name), ok, rule)
    if cls.serial_prob + cls.pow2_prob > 1 + 1e-12:
        raise UserError(
            f"{where}.pow2_prob: serial_prob + pow2_prob must be <= 1; got {cls.serial_prob} + {cls.pow2_prob}"
        )
    if cls.u_med_offset < cls.u_hi_offset:
        raise UserError(
            f"{where}.u_med_offset: must be >= u_hi_offset (u_med <= u_hi); got {cls.u_med_offset} < {cls.u_hi_offset}"
        )
    if not np.all(daily_cycle_weights(cls, cyclic_day_start) > 0):
        raise UserError(
            f"{where}.anum/bnum: the daily cycle gives some half-hour bucket zero weight "
            f"(anum={cls.anum}, bnum={cls.bnum}); no arrivals could happen then"
        )


def _check_int(name: str, value) -> None:
    if isinstance(value, bool) or not isinstance(value, Integral) or value < 1:
        raise UserError(f"{name}: must be an integer >= 1; got {value!r}")


def _check_real(name: str, value, ok, rule: str) -> None:
    if isinstance(value, bool) or not isinstance(value, Real) or not math.isfinite(value) or not ok(value):
        raise UserError(f"{name}: must be {rule}; got {value!r}")
