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

from collections.abc import Iterator
from contextlib import contextmanager


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


class PolicyError(RuntimeError):
    """A policy asked an engine for something the model forbids (serving a
    job twice, placing over capacity, starting more processors than are
    free, overfilling a node's memory, leaving jobs unserved). It is a bug in
    the policy, never silently fixed: the message names the simulated time
    and the job, and ``Engine.run`` prefixes the policy's name. In a sweep it
    becomes a failure record."""
