"""VQS's universal partition and reduced configuration set (Psychas &
Ghaderi §V-A, eq. 18-20): the arithmetic of the model, shared by the
policies (``schedlab.engines.packing.policies.vqs``, whose docstring explains it) and
their compiled kernel (``schedlab.engines.packing.sim.fast``), which builds its
tables from these same functions.
"""

from __future__ import annotations

from bisect import bisect_left

from schedlab.errors import UserError

TYPE1_RESERVE = 2.0 / 3.0
"""VQS rule (i): the share of a server reserved for type 1 when ``k_1 = 1``."""

DEFAULT_J = 4


def check_J(J, where: str = "J") -> int:
    if isinstance(J, bool) or not isinstance(J, int) or J < 2:
        raise UserError(f"{where}: must be an integer >= 2, got {J!r}")
    return J


def universal_partition(J: int) -> list[tuple[float, float]]:
    """The intervals ``(lo, hi]`` of eq. 18, index = type ``0..2J-1``."""
    check_J(J)
    out: list[tuple[float, float]] = []
    for m in range(J):
        s = 2.0**-m
        out.append((TYPE1_RESERVE * s, s))
        out.append((0.5 * s, TYPE1_RESERVE * s))
    return out


def ascending_bounds(J: int) -> list[float]:
    part = universal_partition(J)
    return [part[-1][0]] + [hi for _, hi in reversed(part)]


def job_type(r: float, J: int) -> int:
    """Type of a job of (normalised) size ``r in (0, 1]``: ``j`` with ``r in I_j``,
    ``2J-1`` for ``r <= 1/2^J``."""
    check_J(J)
    if not (0.0 < r <= 1.0):
        raise ValueError(f"job size {r!r} is not in (0, 1]")
    return type_of(r, ascending_bounds(J))


def type_of(r: float, asc: list[float]) -> int:
    # asc[i] = upper end of type (2J - i); r in (asc[i-1], asc[i]] -> type 2J - i
    n_types = len(asc) - 1
    i = bisect_left(asc, r)
    if i == 0:
        return n_types - 1
    return n_types - i


def upper_rounded(j: int, J: int) -> float:
    """The upper end of ``I_j`` (the size a type-``j`` job is rounded up to)."""
    part = universal_partition(J)
    if not 0 <= j < len(part):
        raise ValueError(f"type {j!r} is not in 0..{len(part) - 1}")
    return part[j][1]


def k_red(J: int) -> list[tuple[int, ...]]:
    """The reduced configuration set of eq. 19, in eq. 19's order (4J - 4)."""
    check_J(J)
    n = 2 * J

    def vec(*pairs: tuple[int, int]) -> tuple[int, ...]:
        v = [0] * n
        for t, c in pairs:
            v[t] += c
        return tuple(v)

    out = [vec((2 * m, 2**m)) for m in range(J)]
    out += [vec((2 * m + 1, 3 * 2 ** (m - 1))) for m in range(1, J)]
    out += [vec((1, 1), (2 * m, 2**m // 3)) for m in range(2, J)]
    out += [vec((1, 1), (2 * m + 1, 2 ** (m - 1))) for m in range(1, J)]
    return out


def split_config(config: tuple[int, ...]) -> tuple[int, int, int]:
    """(k_1, other type j, k_j) of a K_RED configuration."""
    others = [(t, c) for t, c in enumerate(config) if c and t != 1]
    assert len(others) == 1 and config[1] in (0, 1), config
    return config[1], others[0][0], others[0][1]


def max_weight(configs: list[tuple[int, ...]], Q) -> int | None:
    """Index of ``argmax_k <k, Q>`` (eq. 20), ties to the first; ``None`` when
    every weight is 0 (all the VQs the configurations use are empty)."""
    best, best_w = None, 0
    for i, k in enumerate(configs):
        w = sum(kj * qj for kj, qj in zip(k, Q) if kj)
        if w > best_w:
            best, best_w = i, w
    return best
