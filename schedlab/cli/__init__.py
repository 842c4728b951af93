"""`schedlab` command line.

Start-up stays light: ray, mlflow, polars and the simulators are imported inside
the commands that need them, never at module level. Every user mistake is a
`UserError`: one line on stderr naming the place, exit code 2, no traceback
(a spec with several mistakes, `UserErrors`: one such line per mistake).

The group (`main`, the console script ``schedlab``) and the exit codes are in
`group`; the commands live in one module per theme and register themselves on
`main` when imported here: `simulation` (policies, simulate, workloads
inspect), `sweeps` (validate, plan, run, track, compact), `analysis` (results,
compare, plot), `pipeline_commands` (pipelines list / run), `policy_check`
(check-policy), `views` (view: a run's schedule), `gym_commands` (gym export: a trained
model as an agent); `progress` is the status line of a running sweep. Every command
module imports only click and the standard library at module level.
"""

from __future__ import annotations

from schedlab.cli.analysis import compare, plot_cmd, results
from schedlab.cli.group import EXIT_FAILURES, EXIT_INTERRUPTED, EXIT_TRACKING, main
from schedlab.cli.gym_commands import gym
from schedlab.cli.pipeline_commands import pipelines, pipelines_list, pipelines_run
from schedlab.cli.policy_check import check_policy_cmd
from schedlab.cli.progress import ProgressLine
from schedlab.cli.simulation import SYNTHETIC_OPTIONS, inspect_cmd, policies, simulate, workloads
from schedlab.cli.sweeps import compact, plan, run, track, validate
from schedlab.cli.views import view_cmd

__all__ = [
    "EXIT_FAILURES",
    "EXIT_INTERRUPTED",
    "EXIT_TRACKING",
    "SYNTHETIC_OPTIONS",
    "ProgressLine",
    "check_policy_cmd",
    "compact",
    "compare",
    "gym",
    "inspect_cmd",
    "main",
    "pipelines",
    "pipelines_list",
    "pipelines_run",
    "plan",
    "plot_cmd",
    "policies",
    "results",
    "run",
    "simulate",
    "track",
    "validate",
    "view_cmd",
    "workloads",
]
