"""VQS and VQS-BF (Psychas & Ghaderi §V-§VII): partition, K_RED, the rules by
hand on a fake cluster handle, a brute-force reference on random instances,
and the paper's §VII-A examples 1-2 on the engine."""

from __future__ import annotations

import math
import random
from fractions import Fraction

import numpy as np
import pytest

from schedlab.engines.packing.policies.vqs import FIT_TOL, VQS, VQSBF
from schedlab.engines.packing.sim.engine import simulate_packing
from schedlab.engines.packing.sim.vqs_partition import job_type, k_red, max_weight, universal_partition, upper_rounded
from schedlab.errors import UserError


# --------------------------------------------------------------------------------------------
# A minimal fake of the documented Cluster handle (servers, resources, capacity(s), free(s),
# demand(job), now, jobs_on(s)) that applies placements and departures and checks capacity.
class FakeCluster:
    def __init__(self, L: int, capacity: float = 1.0, d: int = 1) -> None:
        self.servers, self.resources, self.now = L, d, 0.0
        self._cap = [np.full(d, capacity) for _ in range(L)]
        self._free = [c.copy() for c in self._cap]
        self._dem: list[np.ndarray] = []
        self._on: list[set[int]] = [set() for _ in range(L)]
        self.where: dict[int, int] = {}

    def capacity(self, s):
        return self._cap[s]

    def free(self, s):
        return self._free[s]

    def demand(self, job):
        return self._dem[job]

    def jobs_on(self, s):
        return self._on[s]

    def new_job(self, size: float) -> int:
        self._dem.append(np.full(self.resources, float(size)))
        return len(self._dem) - 1

    def place(self, job: int, s: int) -> None:
        assert job not in self.where, f"job {job} placed twice"
        assert np.all(self._dem[job] <= self._free[s] + FIT_TOL), (job, s, self._free[s], self._dem[job])
        self._free[s] = self._free[s] - self._dem[job]
        self._on[s].add(job)
        self.where[job] = s

    def remove(self, job: int) -> int:
        s = self.where.pop(job)
        self._on[s].discard(job)
        self._free[s] = self._free[s] + self._dem[job]
        if not self._on[s]:
            self._free[s] = self._cap[s].copy()
        return s


def step(policy, cluster: FakeCluster, arrivals=(), departures=()):
    """One decision epoch: departures, arrivals (sizes), then schedule (applied)."""
    cluster.now += 1
    for job in departures:
        policy.depart(job, cluster.remove(job))
    for size in arrivals:
        policy.arrive(cluster.new_job(size))
    placements = policy.schedule()
    for job, s in placements:
        cluster.place(job, s)
    return placements


# --------------------------------------------------------------------------------------------
# universal partition (eq. 18) and types
def test_partition_J3_by_hand():
    part = universal_partition(3)
    expected = [(2 / 3, 1), (1 / 2, 2 / 3), (1 / 3, 1 / 2), (1 / 4, 1 / 3), (1 / 6, 1 / 4), (1 / 8, 1 / 6)]
    assert len(part) == 6
    for (lo, hi), (elo, ehi) in zip(part, expected):
        assert lo == pytest.approx(elo, abs=1e-15) and hi == pytest.approx(ehi, abs=1e-15)
    # contiguous, decreasing, covering (1/8, 1]
    assert all(part[i][0] == part[i + 1][1] for i in range(5))
    assert [upper_rounded(j, 3) for j in range(6)] == [hi for _, hi in part]


@pytest.mark.parametrize(
    "r, t",
    [
        (1.0, 0),
        (0.9, 0),
        (2 / 3, 1),
        (0.6, 1),
        (0.5, 2),
        (0.4, 2),
        (1 / 3, 3),
        (0.3, 3),
        (0.25, 4),
        (0.2, 4),
        (1 / 6, 5),
        (0.15, 5),
        (1 / 8, 5),
        (0.1, 5),
        (1e-6, 5),  # (0, 1/2^J] -> last type
        (2 / 3 + 1e-12, 0),
        (0.5 + 1e-12, 1),
        (1 / 3 + 1e-12, 2),
        (0.25 + 1e-12, 3),
        (1 / 6 + 1e-12, 4),
    ],
)
def test_job_type_J3_boundaries_left_open_right_closed(r, t):
    assert job_type(r, 3) == t


def test_job_type_matches_exact_intervals():
    rng = random.Random(5)
    for J in (2, 3, 5):
        exact = []
        for m in range(J):
            exact += [(Fraction(2, 3) / 2**m, Fraction(1, 2**m)), (Fraction(1, 2) / 2**m, Fraction(2, 3) / 2**m)]
        for _ in range(300):
            r = rng.uniform(1e-4, 1.0)
            fr = Fraction(r)
            want = next((j for j, (lo, hi) in enumerate(exact) if lo < fr <= hi), 2 * J - 1)
            assert job_type(r, J) == want
    with pytest.raises(ValueError):
        job_type(0.0, 3)
    with pytest.raises(ValueError):
        job_type(1.5, 3)


# --------------------------------------------------------------------------------------------
# K_RED (Definition 6, eq. 19)
def _e(n, *pairs):
    v = [0] * n
    for t, c in pairs:
        v[t] = c
    return tuple(v)


def test_k_red_by_hand_J2_J3():
    assert k_red(2) == [_e(4, (0, 1)), _e(4, (2, 2)), _e(4, (3, 3)), _e(4, (1, 1), (3, 1))]
    assert k_red(3) == [
        _e(6, (0, 1)),
        _e(6, (2, 2)),
        _e(6, (4, 4)),  # 2^m e_2m
        _e(6, (3, 3)),
        _e(6, (5, 6)),  # 3*2^(m-1) e_2m+1
        _e(6, (1, 1), (4, 1)),  # e_1 + floor(2^m/3) e_2m
        _e(6, (1, 1), (3, 1)),
        _e(6, (1, 1), (5, 2)),  # e_1 + 2^(m-1) e_2m+1
    ]


@pytest.mark.parametrize("J", range(2, 9))
def test_k_red_count_and_feasible_upper_rounded(J):
    configs = k_red(J)
    assert len(configs) == 4 * J - 4 == len(set(configs))
    exact_hi = []
    for m in range(J):
        exact_hi += [Fraction(1, 2**m), Fraction(2, 3) / 2**m]
    for k in configs:
        assert len(k) == 2 * J
        assert sum(c * hi for c, hi in zip(k, exact_hi)) <= 1
        assert sum(c * upper_rounded(j, J) for j, c in enumerate(k)) <= 1 + 1e-12
        others = [j for j, c in enumerate(k) if c and j != 1]
        assert k[1] in (0, 1) and len(others) == 1


def test_max_weight_by_hand():
    configs = k_red(3)
    # weights: e0 1, 2e2 2, 4e4 12, 3e3 0, 6e5 0, e1+e4 5, e1+e3 2, e1+2e5 2
    assert configs[max_weight(configs, (1, 2, 1, 0, 3, 0))] == _e(6, (4, 4))
    # 2e2 -> 6 and 6e5 -> 6: tie to the first in eq. 19 order
    assert configs[max_weight(configs, (0, 0, 3, 0, 0, 1))] == _e(6, (2, 2))
    # e1+e3 -> 5 + 1 = 6 beats 3e3 -> 3
    assert configs[max_weight(configs, (0, 5, 0, 1, 0, 0))] == _e(6, (1, 1), (3, 1))
    c2 = k_red(2)
    assert c2[max_weight(c2, (2, 0, 1, 0))] == _e(4, (0, 1))  # e0 2 vs 2e2 2: tie -> e0
    assert c2[max_weight(c2, (0, 2, 0, 1))] == _e(4, (3, 3))  # 3e3 3 vs e1+e3 3: tie -> 3e3
    assert c2[max_weight(c2, (0, 3, 0, 1))] == _e(4, (1, 1), (3, 1))
    assert max_weight(c2, (0, 0, 0, 0)) is None
    assert max_weight(c2, (0, 4, 0, 0)) == 3  # only e1+e3 uses type 1


# --------------------------------------------------------------------------------------------
# parameters and cluster checks
@pytest.mark.parametrize("cls", [VQS, VQSBF])
def test_params_validated(cls):
    for bad in (1, 0, -3, 2.5, "4", True):
        with pytest.raises(UserError, match="J"):
            cls(FakeCluster(1), J=bad)
    with pytest.raises(UserError, match="d = 2"):
        cls(FakeCluster(1, d=2))
    with pytest.raises(UserError, match="capacity"):
        cls(FakeCluster(2, capacity=10.0))
    with pytest.raises(UserError, match="bogus"):
        cls(FakeCluster(1), bogus=1)
    p = cls(FakeCluster(1))
    assert p.J == 4 and len(p.configs) == 12
    assert cls(FakeCluster(1), J=2).J == 2


# --------------------------------------------------------------------------------------------
# VQS rules by hand
def test_vqs_reservation_and_renewal_only_when_empty():
    c = FakeCluster(1)
    p = VQS(c, J=2)  # types: 0 (2/3,1] 1 (1/2,2/3] 2 (1/3,1/2] 3 (0,1/3]
    # Q = (0,1,0,2): 3e3 -> 6 beats e1+e3 -> 3; the 0.6 job waits
    assert step(p, c, [0.6, 0.3, 0.3]) == [(1, 0), (2, 0)]
    assert p.configuration(0) == (0, 0, 0, 3)
    # a departure leaves the server non-empty: configuration kept, 0.6 still waits
    assert step(p, c, [], [1]) == []
    assert p.configuration(0) == (0, 0, 0, 3) and p.queue_lengths() == (0, 1, 0, 0)
    # empty now: renewed with Q = (0,1,0,0) -> e1+e3, the type-1 job goes in
    assert step(p, c, [], [2]) == [(0, 0)]
    assert p.configuration(0) == (0, 1, 0, 1)
    # type 3 gets 1 - 2/3 = 1/3: 0.3 fits, then 0.05 does not (0.35 > 1/3) although 0.1 is free
    assert step(p, c, [0.3, 0.05]) == [(3, 0)]
    assert step(p, c, [0.55]) == []  # at most one type-1 job
    # the type-1 job leaves: the reservation is kept, the next type-1 job (head) goes in
    assert step(p, c, [], [0]) == [(5, 0)]
    # 0.3 leaves: 0.05 fits the type-3 share again
    assert step(p, c, [], [3]) == [(4, 0)]


def test_vqs_head_of_line_blocks():
    c = FakeCluster(1)
    p = VQS(c, J=2)
    # 0.9 of type 3 used, head 0.2 does not fit, the 0.05 behind it waits (FIFO)
    assert step(p, c, [0.3, 0.3, 0.3, 0.2, 0.05]) == [(0, 0), (1, 0), (2, 0)]
    assert p.queue_lengths() == (0, 0, 0, 2)
    # more than k_3 = 3 jobs when the actual sizes allow it
    c = FakeCluster(1)
    p = VQS(c, J=2)
    assert step(p, c, [0.3, 0.3, 0.3, 0.05, 0.05, 0.01]) == [(j, 0) for j in range(5)]


def test_vqs_five_jobs_of_0_2_fill_a_server():
    c = FakeCluster(1)
    p = VQS(c, J=4)
    assert step(p, c, [0.2] * 6) == [(j, 0) for j in range(5)]


def test_vqs_servers_renew_in_turn_with_current_Q():
    c = FakeCluster(2)
    p = VQS(c, J=2)
    # server 0: 3e3 (9 > 4) takes the three 0.3; server 1 then sees Q = (0,1,0,0) -> e1+e3
    assert step(p, c, [0.6, 0.3, 0.3, 0.3]) == [(1, 0), (2, 0), (3, 0), (0, 1)]
    assert p.configuration(0) == (0, 0, 0, 3) and p.configuration(1) == (0, 1, 0, 1)


def test_vqs_lowest_index_server_first_and_woken_on_new_head():
    c = FakeCluster(2)
    p = VQS(c, J=2)
    # server 0 takes 0.3 x3 (room 0.1), server 1 takes 0.3, 0.3, 0.15 (room 0.25)
    assert step(p, c, [0.3, 0.3, 0.3, 0.3, 0.3, 0.15]) == [(0, 0), (1, 0), (2, 0), (3, 1), (4, 1), (5, 1)]
    # 0.2 fits only server 1; the next head 0.1 then fits only server 0
    assert step(p, c, [0.2, 0.1]) == [(6, 1), (7, 0)]


def test_vqs_empty_server_keeps_no_configuration_until_jobs_arrive():
    c = FakeCluster(3)
    p = VQS(c, J=3)
    assert step(p, c, [0.45]) == [(0, 0)]
    assert p.configuration(0) == (0, 0, 2, 0, 0, 0)
    assert p.configuration(1) is None and p.configuration(2) is None
    assert step(p, c, [], [0]) == []
    assert p.configuration(0) is None
    # Q = (0,0,0,0,2,1): 4e4 -> 8 beats 6e5 -> 6; server 0 takes both 0.2; server 1 then 6e5
    assert step(p, c, [0.2, 0.2, 0.1]) == [(1, 0), (2, 0), (3, 1)]
    assert p.configuration(1) == (0, 0, 0, 0, 0, 6) and p.configuration(2) is None


# --------------------------------------------------------------------------------------------
# VQS-BF rules by hand
def test_vqsbf_rule_i_largest_type1_then_rule_ii_stops_at_kj():
    c = FakeCluster(1)
    p = VQSBF(c, J=2)
    # Q = (0,3,0,1): e1+e3 -> 4 beats 3e3 -> 3; (i) the largest type-1 job 0.65; (ii) 0.3
    assert step(p, c, [0.55, 0.6, 0.65, 0.3]) == [(2, 0), (3, 0)]
    assert p.configuration(0) == (0, 1, 0, 1)
    # the 0.65 leaves: (i) takes the largest type-1 job that fits the free 0.7: 0.6
    assert step(p, c, [], [2]) == [(1, 0)]


def test_vqsbf_rule_ii_then_best_fit_s():
    c = FakeCluster(1)
    p = VQSBF(c, J=3)
    # Q = (0,0,3,0,0,1): 2e2 ties 6e5 -> 2e2; (ii) 0.45 then 0.4 (k_2 = 2 reached);
    # (iii) BF-S on the 0.15 left: 0.1 (0.35 does not fit)
    assert step(p, c, [0.45, 0.4, 0.35, 0.1]) == [(0, 0), (1, 0), (3, 0)]
    assert p.configuration(0) == (0, 0, 2, 0, 0, 0)


def test_vqsbf_no_head_of_line_blocking_and_ties_to_earliest():
    c = FakeCluster(1)
    p = VQSBF(c, J=2)
    # 3e3: (ii) three 0.3 (largest, earliest first), (iii) 0.2 does not fit 0.1, the 0.05 does
    assert step(p, c, [0.2, 0.3, 0.05, 0.3, 0.3, 0.3]) == [(1, 0), (3, 0), (4, 0), (2, 0)]


def test_vqsbf_renewal_only_when_empty():
    c = FakeCluster(1)
    p = VQSBF(c, J=2)
    assert step(p, c, [0.45, 0.45]) == [(0, 0), (1, 0)]
    assert p.configuration(0) == (0, 0, 2, 0)
    # many type-3 jobs queue: the configuration stays while the server holds a job,
    # but BF-S still fills the room a departure leaves
    assert step(p, c, [0.3] * 4, [0]) == [(2, 0)]
    assert p.configuration(0) == (0, 0, 2, 0)
    assert step(p, c, [], [1, 2]) == [(3, 0), (4, 0), (5, 0)]
    assert p.configuration(0) == (0, 0, 0, 3)


# --------------------------------------------------------------------------------------------
# brute-force references (scans, no sorted structures), compared on random instances
class RefVQS:
    """Repeatedly, the lowest-index server that can act renews (if empty) and fills."""

    bf = False

    def __init__(self, cluster, J):
        self.c, self.J = cluster, J
        self.configs = k_red(J)
        self.q: list[int] = []  # queued jobs, arrival order
        self.cfg = [None] * cluster.servers

    def arrive(self, job):
        self.q.append(job)

    def depart(self, job, s):
        if not self.c.jobs_on(s):
            self.cfg[s] = None

    def size(self, job):
        return float(self.c.demand(job)[0])

    def typ(self, job):
        return job_type(min(self.size(job), 1.0), self.J)

    def Q(self):
        Q = [0] * (2 * self.J)
        for job in self.q:
            Q[self.typ(job)] += 1
        return Q

    def split(self, s):
        k = self.configs[self.cfg[s]]
        j = next(t for t, n in enumerate(k) if n and t != 1)
        return k[1], j, k[j]

    def on(self, s, extra):
        return [x for x in list(self.c.jobs_on(s)) + extra[s]]

    def schedule(self):
        out, extra = [], {s: [] for s in range(self.c.servers)}
        while self.q:
            for s in range(self.c.servers):
                if self.act(s, out, extra):
                    break
            else:
                break
        return out

    def act(self, s, out, extra):
        running = self.on(s, extra)
        if not running:
            self.cfg[s] = max_weight(self.configs, self.Q())
            if self.cfg[s] is None:
                return False
        k1, j, _ = self.split(s)
        n0 = len(out)
        if k1 and not any(self.typ(x) == 1 for x in running):
            head = next((x for x in self.q if self.typ(x) == 1), None)
            if head is not None:
                self.put(head, s, out, extra)
        cap = 1 - 2 / 3 if k1 else 1.0
        while True:
            used = math.fsum(self.size(x) for x in self.on(s, extra) if self.typ(x) == j)
            head = next((x for x in self.q if self.typ(x) == j), None)
            if head is None or self.size(head) > cap - used + FIT_TOL:
                break
            self.put(head, s, out, extra)
        return len(out) > n0

    def put(self, job, s, out, extra):
        self.q.remove(job)
        extra[s].append(job)
        out.append((job, s))


class RefVQSBF(RefVQS):
    """Each server with room for the smallest queued job, once, in index order."""

    def free(self, s, extra):
        return 1.0 - math.fsum(self.size(x) for x in self.on(s, extra))

    def largest(self, s, extra, pred):
        room = self.free(s, extra)
        fit = [x for x in self.q if pred(x) and self.size(x) <= room + FIT_TOL]
        return max(fit, key=lambda x: (self.size(x), -x), default=None)

    def schedule(self):
        out, extra = [], {s: [] for s in range(self.c.servers)}
        if not self.q:
            return out
        lo = min(self.size(x) for x in self.q)
        cands = [s for s in range(self.c.servers) if self.free(s, extra) + FIT_TOL >= lo]
        for s in cands:
            if not self.q:
                break
            if not self.on(s, extra):
                self.cfg[s] = max_weight(self.configs, self.Q())
            k1, j, kj = self.split(s)
            if k1 and not any(self.typ(x) == 1 for x in self.on(s, extra)):
                x = self.largest(s, extra, lambda x: self.typ(x) == 1)
                if x is not None:
                    self.put(x, s, out, extra)
            while sum(self.typ(x) == j for x in self.on(s, extra)) < kj:
                x = self.largest(s, extra, lambda x, j=j: self.typ(x) == j)
                if x is None:
                    break
                self.put(x, s, out, extra)
            while (x := self.largest(s, extra, lambda x: True)) is not None:
                self.put(x, s, out, extra)
        return out


def _random_size(rng: random.Random, J: int) -> float:
    u = rng.random()
    if u < 0.25:  # exactly on a boundary
        return rng.choice([hi for _, hi in universal_partition(J)] + [2.0**-J])
    if u < 0.35:
        return rng.choice([0.1, 0.2, 0.3, 0.4, 0.6, 0.05])
    if u < 0.5:
        return rng.uniform(0.001, 2.0**-J)
    return rng.uniform(0.01, 1.0)


@pytest.mark.parametrize("cls, ref_cls", [(VQS, RefVQS), (VQSBF, RefVQSBF)])
def test_matches_brute_force_reference_on_random_instances(cls, ref_cls):
    for seed in range(40):
        rng = random.Random(seed)
        J, L = rng.choice([2, 3, 4]), rng.choice([1, 2, 3, 5])
        c1, c2 = FakeCluster(L), FakeCluster(L)
        pol, ref = cls(c1, J=J), ref_cls(c2, J)
        for epoch in range(60):
            running = sorted(c1.where)
            deps = [x for x in running if rng.random() < 0.25]
            arrs = [_random_size(rng, J) for _ in range(rng.choice([0, 0, 1, 2, 4]))]
            got = step(pol, c1, arrs, deps)
            want = step(ref, c2, arrs, deps)
            assert got == want, (seed, epoch)
            for s in range(L):
                assert pol.configuration(s) == (None if ref.cfg[s] is None else ref.configs[ref.cfg[s]]), (
                    seed,
                    epoch,
                    s,
                )
            assert pol.queue_lengths() == tuple(ref.Q())
            _check_fixpoint(pol, c1, ref)


def _check_fixpoint(pol, c, ref):
    """At an epoch's end: no empty server while jobs queue; VQS: no server can take a
    head; its jobs are of its configuration's types; VQS-BF: no room for any queued job."""
    if not ref.q:
        return
    smallest = min(ref.size(x) for x in ref.q)
    for s in range(c.servers):
        assert c.jobs_on(s)
        if isinstance(pol, VQSBF):
            assert float(c.free(s)[0]) + FIT_TOL < smallest
            continue
        k1, j, _ = ref.split(s)
        types = [ref.typ(x) for x in c.jobs_on(s)]
        assert set(types) <= ({1, j} if k1 else {j})
        assert types.count(1) <= 1
        if k1 and types.count(1) == 0:
            assert not any(ref.typ(x) == 1 for x in ref.q)
        head = next((x for x in ref.q if ref.typ(x) == j), None)
        if head is not None:
            used = math.fsum(ref.size(x) for x in c.jobs_on(s) if ref.typ(x) == j)
            assert ref.size(head) > (1 / 3 if k1 else 1.0) - used + FIT_TOL


# --------------------------------------------------------------------------------------------
# the paper's §VII-A examples on the engine
#: queued resource per slot. Example 1's VQS queue resource grows at about 4e-4/slot
#: over the second half (seeds 1, 3, 4: 4.2e-4, 4.5e-4, 4.0e-4); half of that is the bar.
GROWTH_SLOPE = 2e-4
#: a stable queue's resource drifts well below this over the second half (observed ~1e-6)
STABLE_SLOPE = 5e-5


def _slotted(rng, T, rate, sizes, probs):
    counts = rng.poisson(rate, T)
    submit = np.repeat(np.arange(T, dtype=float), counts)
    demand = rng.choice(sizes, size=len(submit), p=probs)
    return submit, demand


def _second_half_slope(res) -> float:
    t = res.samples["t"]
    y = res.samples["queue_resource"][:, 0]
    half = len(t) // 2
    return float(np.polyfit(t[half:], y[half:], 1)[0])


def test_example1_vqs_unstable_vqsbf_stable():
    T = 1_000_000
    rng = np.random.default_rng(1)
    submit, demand = _slotted(rng, T, 0.014, [0.4, 0.6], [0.5, 0.5])
    duration = rng.geometric(0.01, size=len(submit)).astype(float)
    run = lambda cls: simulate_packing(  # noqa: E731
        submit, duration, demand, [1.0], cls, epoch=1.0, sample_every=1000.0, until=float(T)
    )
    vqs, bf = run(VQS), run(VQSBF)
    assert _second_half_slope(vqs) > GROWTH_SLOPE
    assert vqs.samples["queue_jobs"][-1] > 200
    assert abs(_second_half_slope(bf)) < STABLE_SLOPE
    assert bf.queue_jobs_mean < vqs.queue_jobs_mean / 5


def test_example2_vqs_stable_with_normalised_sizes():
    T = 1_000_000
    rng = np.random.default_rng(2)
    submit, demand = _slotted(rng, T, 0.0306, [2.0, 5.0], [2 / 3, 1 / 3])
    demand = demand / 10.0  # capacity 10 -> 1: sizes 0.2 and 0.5
    duration = np.full(len(submit), 100.0)
    res = simulate_packing(submit, duration, demand, [1.0], VQS, epoch=1.0, sample_every=1000.0, until=float(T))
    assert abs(_second_half_slope(res)) < STABLE_SLOPE
    assert res.samples["queue_jobs"].max() < 200


def test_example2_vqsbf_can_lock_into_an_unstable_configuration_while_vqs_stays_bounded():
    """§VII-A example 2: VQS-BF (like BF-J/S) can stay locked in the (2, 1)
    configuration, whose departure rates (0.02, 0.01) are below the arrival
    rates (0.0204, 0.0102); the paper says this happens with positive
    probability, not always. Seed 5 is a run where it does (seeds 2-7 give
    second-half slopes of -3e-5 .. 3e-4): pinned, with VQS on the same jobs."""
    T = 1_000_000
    rng = np.random.default_rng(5)
    submit, demand = _slotted(rng, T, 0.0306, [2.0, 5.0], [2 / 3, 1 / 3])
    demand = demand / 10.0
    duration = np.full(len(submit), 100.0)
    run = lambda cls: simulate_packing(  # noqa: E731
        submit, duration, demand, [1.0], cls, epoch=1.0, sample_every=1000.0, until=float(T)
    )
    vqsbf, vqs = run(VQSBF), run(VQS)
    assert _second_half_slope(vqsbf) > GROWTH_SLOPE
    assert abs(_second_half_slope(vqs)) < STABLE_SLOPE
    assert vqs.samples["queue_jobs"].max() < 200
