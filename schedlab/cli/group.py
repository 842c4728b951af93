"""The `schedlab` group (`main`, the console script) and the exit codes: its
own module so that the command modules can register on `main` without importing
the package that imports them."""

from __future__ import annotations

import atexit
import gc
import os
import sys

import click

from schedlab.errors import UserError, messages
from schedlab.version import __version__

#: Exit codes of `run` and `track` (README, "Exit codes").
EXIT_FAILURES = 1  # some simulations raised (recorded in failures/)
EXIT_TRACKING = 3  # results are complete in Parquet but MLflow does not match them
EXIT_INTERRUPTED = 130  # Ctrl-C: what arrived is committed; run again to resume


class _Group(click.Group):
    """Turns a UserError anywhere below into one clean line and exit code 2."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except UserError as err:  # several independent mistakes (UserErrors): one line each
            for line in messages(err):
                click.echo(f"schedlab: error: {line}", err=True)
            if getattr(err, "hard_exit", False):  # a thread may be stuck inside a library (execution.connect)
                sys.stderr.flush()
                sys.stdout.flush()
                os._exit(UserError.exit_code)
            ctx.exit(UserError.exit_code)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="schedlab")
def main() -> None:
    """Scheduling-policy simulations and sweeps (queue engine: the PSBS paper)."""
    # At exit (after the command, before the interpreter's teardown) the
    # objects still alive are moved out of the garbage collector's reach, so
    # the interpreter's final collection does not walk them. With matplotlib, polars and the compiled
    # kernels loaded that walk took 0.35-0.5 s of every command's wall; the
    # memory is the OS's to free a moment later. Files are closed by then:
    # results are committed (and fsynced) before a command returns.
    atexit.register(gc.freeze)
