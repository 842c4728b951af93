"""`schedlab check-policy`: a policy against its engine's invariants on seeded
random workloads (`schedlab.checks`), with its ``--param KEY=VALUE`` parsing."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from schedlab.cli.group import main
from schedlab.errors import UserError


@main.command("check-policy")
@click.argument("ref")
@click.option("--engine", help='queue, packing, batch, dfrs or your own ("my_engine.py:MyEngine"; required).')
@click.option(
    "--param",
    "param_items",
    multiple=True,
    metavar="KEY=VALUE",
    help="A policy parameter as a TOML value (repeatable): --param alpha=0.5 --param mode='\"fast\"'.",
)
@click.option("--examples", type=int, default=200, show_default=True, help="Random workloads to try.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the workload search.")
def check_policy_cmd(ref: str, engine: str | None, param_items: tuple[str, ...], examples: int, seed: int) -> None:
    """Check a policy against its engine's invariants on seeded random workloads.

    REF is your class ("mypolicies.py:AgedSRPT", "mylab.policies:AgedSRPT")
    or a built-in policy name. Prints "ok (N workloads)" (exit 0) or the
    violated invariant and the smallest failing workload found (exit 1).
    """
    from schedlab.checks import check_policy
    from schedlab.engines import ENGINES

    if engine is None:
        raise UserError(f"check-policy: --engine is required (one of {', '.join(ENGINES)})")
    report = check_policy(engine, ref, _toml_params(param_items), examples, seed, base_dir=Path.cwd())
    click.echo(report.render())
    sys.exit(0 if report.ok else 1)


def _toml_params(items: tuple[str, ...]) -> dict[str, object]:
    """``--param KEY=VALUE`` items -> {key: value}, each value a TOML scalar
    (0.5, 3, true, "text"); one-line UserError naming the item otherwise."""
    import tomllib

    out: dict[str, object] = {}
    for item in items:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key.isidentifier():
            raise UserError(f"--param {item!r}: expected NAME=VALUE (e.g. --param alpha=0.5)")
        if key in out:
            raise UserError(f"--param {key}: given twice")
        try:
            parsed = tomllib.loads(f"x = {value}")["x"]
        except tomllib.TOMLDecodeError:
            raise UserError(
                f"--param {item!r}: {value!r} is not a TOML value (numbers as 0.5, booleans as true, "
                f"strings in quotes: {key}='\"{value}\"')"
            ) from None
        if isinstance(parsed, (dict, list)):
            raise UserError(
                f"--param {item!r}: give one value (a TOML number, boolean or string), not "
                f"{'an array' if isinstance(parsed, list) else 'a table'}"
            )
        out[key] = parsed
    return out
