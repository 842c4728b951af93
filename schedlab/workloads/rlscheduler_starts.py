"""RLScheduler's evaluation sequences (``compare-pick-jobs.py``): the first job
of each of its ``--iter`` sequences of ``--len`` jobs, drawn as its
``HPCEnv.reset_for_test`` draws them, so that a sweep runs its heuristics on
the very sequences its published tables used.

``HPCEnv.seed(seed)`` builds its generator with the ``gym`` of its time
(before 0.22; its code calls ``np_random.randint``, which later versions'
generators lack): ``gym.utils.seeding.np_random``, a ``numpy.random.RandomState``
seeded with the first 8 bytes of the SHA-512 of the seed's decimal string,
read as a little-endian integer (padded by 4 zero bytes) and split into 32-bit
words. ``reset_for_test`` then draws each start with ``randint(len, size - len -
1)`` (``size``: the jobs of the log, or its ``batch_job_slice`` when set), one
draw per sequence, ignoring the start it is given; nothing else draws from that
generator between two sequences. Indices are positions in the log's jobs
(RLScheduler keeps the jobs of run time > 0, sorted by job number: the jobs
schedlab's SWF reader keeps, in the same order, for the Lublin and HPC2N
logs -- ``benchmarks/rlscheduler_compare.py`` checks it)."""

from __future__ import annotations

import hashlib
import struct

import numpy as np

#: compare-pick-jobs.py's defaults: --seed 1, --iter 10, --len 1024.
SEED, SEQUENCES, LENGTH = 1, 10, 1024
#: gym.utils.seeding.hash_seed's bytes of the digest.
_HASH_BYTES = 8


def _seed_words(seed: int) -> list[int]:
    """The 32-bit words old gym seeds its RandomState with (``hash_seed`` then ``_int_list_from_bigint``)."""
    digest = hashlib.sha512(str(seed).encode("utf8")).digest()[:_HASH_BYTES]
    digest += b"\0" * (4 - len(digest) % 4)  # its padding: always adds 1 to 4 zero bytes
    value = sum(v << (32 * i) for i, v in enumerate(struct.unpack(f"{len(digest) // 4}I", digest)))
    words = []
    while value > 0:
        value, low = divmod(value, 2**32)
        words.append(low)
    return words or [0]


def sequence_starts(size: int, seed: int = SEED, count: int = SEQUENCES, length: int = LENGTH) -> list[int]:
    """The first job (0-based index) of each of RLScheduler's ``count`` test
    sequences of ``length`` jobs among ``size`` jobs, generator seeded with ``seed``."""
    if size - length - 1 <= length:
        raise ValueError(f"RLScheduler's draw needs more than {2 * length + 1} jobs; got {size}")
    rng = np.random.RandomState()
    rng.seed(_seed_words(seed))
    return [int(rng.randint(length, size - length - 1)) for _ in range(count)]


__all__ = ["LENGTH", "SEED", "SEQUENCES", "sequence_starts"]
