"""User-facing errors.

A `UserError` is a mistake in what the user gave us (a spec field, a policy
name, a file row). The CLI prints its message alone, with no traceback, and
exits with code 2. The message must name the place: a field path or file:line.

Checking a whole spec reports every independent mistake, not only the first:
:class:`UserErrors` is a `UserError` carrying a list of one-line messages
(its text is those lines), and :class:`Collector` gathers them from checks
that can go on after one fails. One mistake is always a plain `UserError`
with its one line, so single-error messages read as they always did.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

#: How alike (difflib's ratio, case ignored) a mistyped name and a known one
#: must be for the known one to be suggested.
SUGGEST_CUTOFF = 0.6
#: At most this many suggestions in one "did you mean" (best first).
SUGGEST_MAX = 2


class UserError(Exception):
    """Bad input from the user; the message names where it is."""

    exit_code = 2


class UserErrors(UserError):
    """Several independent mistakes, each a one-line message naming its
    place (``spec.toml: workload.load[1]: ...``); ``str()`` is the lines."""

    def __init__(self, errors: list[str]) -> None:
        self.errors = list(dict.fromkeys(errors))  # the same mistake seen at several grid points: once
        super().__init__("\n".join(self.errors))


def messages(err: UserError) -> list[str]:
    """The one-line messages of a UserError (one, or each of a UserErrors)."""
    return list(err.errors) if isinstance(err, UserErrors) else [str(err)]


class Collector:
    """Gathers UserErrors of independent checks::

    errors = Collector()
    for field in fields:
        with errors.check():
            check(field)          # a UserError here is recorded; the loop goes on
    errors.raise_any()            # none: returns; one: UserError; more: UserErrors
    """

    def __init__(self) -> None:
        self.errors: list[str] = []

    @contextmanager
    def check(self, prefix: str = "") -> Iterator[None]:
        """Record a UserError raised in the block (each message prefixed
        with ``prefix``) instead of letting it propagate."""
        try:
            yield
        except UserError as err:
            self.errors += [prefix + m for m in messages(err)]

    def add(self, message: str) -> None:
        self.errors.append(message)

    def __bool__(self) -> bool:
        return bool(self.errors)

    def raise_any(self) -> None:
        errors = list(dict.fromkeys(self.errors))
        if len(errors) == 1:
            raise UserError(errors[0])
        if errors:
            raise UserErrors(errors)


def close_names(word: str, options: Iterable[str]) -> list[str]:
    """The known names a mistyped ``word`` most likely meant, best first
    (at most `SUGGEST_MAX`): the same name in another case (``Psbs`` ->
    ``PSBS``), else difflib's closest at `SUGGEST_CUTOFF` (case ignored),
    else -- a name too short for a ratio to say anything (``m``) -- the
    names of its length one letter away (``n``)."""
    known = {str(o).casefold(): str(o) for o in options}
    folded = str(word).casefold()
    if folded in known:
        return [known[folded]] if known[folded] != word else []
    found = difflib.get_close_matches(folded, list(known), n=SUGGEST_MAX, cutoff=SUGGEST_CUTOFF)
    if not found:
        found = [k for k in known if len(k) == len(folded) and sum(a != b for a, b in zip(k, folded)) == 1]
    return [known[k] for k in found[:SUGGEST_MAX]]


def did_you_mean(word: str, options: Iterable[str]) -> str:
    """``"; did you mean 'PSBS'?"`` (to end an error line) for the names
    `close_names` finds, or "" when none is close: the one helper every
    unknown name of a spec goes through (keys, policies, workload kinds,
    trace readers, parameters)."""
    found = close_names(word, options)
    if not found:
        return ""
    return "; did you mean " + " or ".join(repr(f) for f in found) + "?"


class PolicyError(RuntimeError):
    """A policy asked an engine for something the model forbids (serving a
    job twice, placing over capacity, starting more processors than are
    free, overfilling a node's memory, leaving jobs unserved). It is a bug in
    the policy, never silently fixed: the message names the simulated time
    and the job, and ``Engine.run`` prefixes the policy's name. In a sweep it
    becomes a failure record."""
