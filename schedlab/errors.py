"""User-facing errors.

A `UserError` is a mistake in what the user gave us (a spec field, a policy
name, a file row). The CLI prints its message alone, with no traceback, and
exits with code 2. The message must name the place: a field path or file:line.
"""


class UserError(Exception):
    """Bad input from the user; the message names where it is."""

    exit_code = 2


class PolicyError(RuntimeError):
    """A policy asked an engine for something the model forbids (serving a
    job twice, placing over capacity, starting more processors than are
    free, overfilling a node's memory, leaving jobs unserved). It is a bug in
    the policy, never silently fixed: the message names the simulated time
    and the job, and ``Engine.run`` prefixes the policy's name. In a sweep it
    becomes a failure record."""
