"""The generators ``seeded(words).spawn(n)`` gives, for many instances at once.

Why: the ``synthetic`` kind draws each instance from the four children of its
instance's generator (``rng.spawn(4)``: sizes, gaps, errors, classes). numpy
makes each child by building a ``SeedSequence`` and a ``PCG64`` from it, about
half of a 50-job instance's whole cost in a sweep (issue 42). The children's
states are pure arithmetic on the seed words (numpy's ``SeedSequence``, the
"seed_seq_fe" design of its bit_generator module, and PCG64's seeding), so a
task computes them for all its instances in a few vectorised numpy passes and
sets them into generators it reuses: the very states, hence the very draws
(tests/test_workloads_streams.py compares them with numpy's own for many seeds).

The steps, as numpy does them (all uint32 arithmetic modulo 2**32):

* the entropy: the seed words as 32-bit words (`entropy_words`, also what
  ``schedlab.engines.instance.seeded`` gives numpy), padded with
  zeros to the pool size (4) when a spawn key follows, then the child's spawn
  key (its index);
* the pool: each of the first four words hashed into the pool (a missing one:
  0 hashed), every pool word mixed with every other's hash, then each further
  word's hash mixed into every pool word; the hash constant steps once per
  hash, so after the same number of words it is the same for every instance;
* a child's entropy is its parent's (padded) plus its index, so its pool is the
  parent's pool with that one word mixed in: the parent's part is computed
  once for all children;
* the state: eight words hashed out of the pool (cycled), read as four
  little-endian uint64: the 128-bit seed (high, low) and stream (high, low) of
  PCG64, which sets ``inc = stream * 2 + 1``, steps, adds the seed, steps.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

#: numpy's SeedSequence constants (bit_generator.pyx).
POOL_SIZE = 4
INIT_A = 0x43B0D7E5
MULT_A = 0x931E8875
INIT_B = 0x8B51F9DD
MULT_B = 0x58F38DED
MIX_MULT_L = 0xCA01F9DD
MIX_MULT_R = 0x4973F715
XSHIFT = 16
#: PCG64's 128-bit multiplier (pcg64.h, PCG_DEFAULT_MULTIPLIER_128).
PCG_MULT = (2549297995355413924 << 64) | 4865540595714422341
MASK128 = (1 << 128) - 1
_U32 = np.uint32


def entropy_words(seed_words: Sequence[int]) -> np.ndarray:
    """``seed_words`` as numpy's ``SeedSequence`` reads a sequence of
    non-negative ints: each int's 32-bit words, least significant first (0
    is one word), concatenated, as uint32. A negative word is numpy's
    ValueError, as before."""
    out: list[int] = []
    for word in seed_words:
        n = int(word)
        if n < 0:
            raise ValueError("expected non-negative integer")
        if n == 0:
            out.append(0)
        while n > 0:
            out.append(n & 0xFFFFFFFF)
            n >>= 32
    return np.array(out, dtype=np.uint32)


class _Hasher:
    """numpy's ``hashmix`` over a column of words: its hash constant is a
    scalar that steps on every call (the same sequence for every row)."""

    def __init__(self, const: int) -> None:
        self.const = const

    def __call__(self, value: np.ndarray) -> np.ndarray:
        value = value ^ _U32(self.const)
        self.const = (self.const * MULT_A) & 0xFFFFFFFF
        value = value * _U32(self.const)
        return value ^ (value >> _U32(XSHIFT))


def _mix(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    result: np.ndarray = _U32(MIX_MULT_L) * x - _U32(MIX_MULT_R) * y
    return result ^ (result >> _U32(XSHIFT))


def _parent_pools(words: np.ndarray) -> tuple[list[np.ndarray], _Hasher]:
    """The pool (four uint32 columns) of each row of ``words`` (rows of equal
    length, already padded to the pool size), and the hasher as it stands after."""
    hashmix = _Hasher(INIT_A)
    pool = [hashmix(words[:, i]) for i in range(POOL_SIZE)]
    for src in range(POOL_SIZE):
        for dst in range(POOL_SIZE):
            if src != dst:
                pool[dst] = _mix(pool[dst], hashmix(pool[src]))
    for src in range(POOL_SIZE, words.shape[1]):
        for dst in range(POOL_SIZE):
            pool[dst] = _mix(pool[dst], hashmix(words[:, src]))
    return pool, hashmix


def _pcg64_states(pool: list[np.ndarray]) -> list[tuple[int, int]]:
    """(state, inc) of the PCG64 seeded from each row's pool."""
    const = INIT_B
    out = []
    for i in range(8):
        value = pool[i % POOL_SIZE] ^ _U32(const)
        const = (const * MULT_B) & 0xFFFFFFFF
        value = value * _U32(const)
        out.append(value ^ (value >> _U32(XSHIFT)))
    lo = [w.astype(np.uint64) for w in out]
    halves = [(lo[2 * k + 1] << np.uint64(32)) | lo[2 * k] for k in range(4)]  # little-endian uint64 words
    states = []
    for s_hi, s_lo, i_hi, i_lo in zip(*(h.tolist() for h in halves), strict=True):
        seed = (s_hi << 64) | s_lo
        inc = ((((i_hi << 64) | i_lo) << 1) | 1) & MASK128
        state = (inc + seed) & MASK128  # a step from 0 (0 * mult + inc), the seed added ...
        states.append(((state * PCG_MULT + inc) & MASK128, inc))  # ... and a step again
    return states


def spawned_states(seed_words: Sequence[Sequence[int]], n_children: int) -> list[list[tuple[int, int]]]:
    """For each instance's seed words, the (state, inc) of the PCG64 of each of
    the first ``n_children`` children of ``seeded(words)`` (the states of
    ``[g.bit_generator.state for g in seeded(words).spawn(n)]``)."""
    out: list[list[tuple[int, int]]] = [[] for _ in seed_words]
    by_length: dict[int, list[tuple[int, np.ndarray]]] = {}
    for k, words in enumerate(seed_words):
        entropy = entropy_words(words)
        if entropy.size < POOL_SIZE:  # numpy pads the run entropy when a spawn key follows
            entropy = np.concatenate([entropy, np.zeros(POOL_SIZE - entropy.size, dtype=np.uint32)])
        by_length.setdefault(entropy.size, []).append((k, entropy))
    for rows in by_length.values():
        table = np.stack([entropy for _, entropy in rows])
        pool, hashmix = _parent_pools(table)
        for child in range(n_children):
            key = np.full(table.shape[0], child, dtype=np.uint32)
            own = _Hasher(hashmix.const)
            child_pool = [_mix(pool[dst], own(key)) for dst in range(POOL_SIZE)]
            for (k, _), state in zip(rows, _pcg64_states(child_pool), strict=True):
                out[k].append(state)
    return out


class Streams:
    """``n`` generators reused from instance to instance: `set` gives them the
    states of one instance's children (`spawned_states`) and returns them.
    They are the children's very streams as long as the caller draws from them
    before the next `set` and keeps none of them (the ``synthetic`` kind's
    array draw returns only arrays)."""

    def __init__(self, n: int) -> None:
        self.bit_generators = [np.random.PCG64(0) for _ in range(n)]
        self.generators = [np.random.Generator(bg) for bg in self.bit_generators]

    def set(self, states: Sequence[tuple[int, int]]) -> list[np.random.Generator]:
        for bg, (state, inc) in zip(self.bit_generators, states, strict=True):
            bg.state = {"bit_generator": "PCG64", "state": {"state": state, "inc": inc}, "has_uint32": 0, "uinteger": 0}
        return self.generators
