"""User-facing errors.

A `UserError` is a mistake in what the user gave us (a spec field, a policy
name, a file row). The CLI prints its message alone, with no traceback, and
exits with code 2. The message must name the place: a field path or file:line.
"""


class UserError(Exception):
    """Bad input from the user; the message names where it is."""

    exit_code = 2
