"""Sweep specs: TOML in, a validated typed model out.

Every mistake becomes one `UserError` naming the file and the field path
(``psbs.toml: workload.shape[2]: must be a number > 0; got -1``) -- the spec
is checked completely (engine, policies, every grid point of the workload)
before anything is run or written.

A spec::

    name = "psbs-shape"          # results/<name>, MLflow experiment <name>
    engine = "queue"
    seed = 1

    [workload]                   # kind + params; a list is a grid axis
    kind = "synthetic"           # or use = "gen.py:fn" (your generator; its params here)
    shape = [0.125, 0.25, 0.5]
    sigma = 0.5
    zip = [["shape", "load"]]    # optional: zip these axes instead of crossing them

    policies = ["PS", "SRPT", "PSBS"]    # or [[policies]] tables: name, params, use
    # your own class: {name = "AgedSRPT", use = "mypolicies.py:AgedSRPT", params = {alpha = [0.1, 1.0]}}
    # (use: a file relative to this spec's folder, or "module:Name"; see docs/extending.md)

    [[metrics]]                  # optional extra summary columns (schedlab.api.metrics)
    name = "sojourn_p999"; use = "quantile"; params = {column = "sojourn", q = 0.999}

    [system]                     # the engine's system parameters (gridable), e.g.
    servers = 5                  # packing: servers, capacity, epoch, sample_every

    [replications]               # either a fixed n ...
    n = 10
    # ... or adaptive: rounds until the 95 % CI half-width of `metric` is within
    # rel_halfwidth of its mean for every configuration
    # metric = "mst"; rel_halfwidth = 0.05; min = 5; max = 200; batch = 5

    [outputs]   dir = "results/psbs-shape"; per_job = false
    [tracking]  enabled = true; uri = "sqlite:///mlflow.db"; experiment = "psbs-shape"
    [execution] address = "ray://head:10001"; max_in_flight = 6; cpus_per_task = 1; retries = 3
    # engine_path = "reference": run even built-in queue policies on the Python
    # reference engine (default "fast": compiled kernels, the same numbers)
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, field_validator, model_validator

from schedlab.errors import UserError

Scalar = Union[bool, int, float, str]
#: A list is a grid axis; a list inside it is one list-valued point ([[0.4, 0.6]]).
ParamValue = Union[Scalar, list[Union[Scalar, list[Scalar]]]]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class PolicyEntry(_Model):
    name: str
    params: dict[str, ParamValue] = Field(default_factory=dict)
    #: Your own policy class: "file.py:Name" (relative to the spec's folder) or "module:Name".
    use: str | None = None


class MetricEntry(_Model):
    """An extra summary metric: a function of the per-job table (a built-in
    from ``schedlab.api.metrics`` or your own ``use = "file.py:fn"``)."""

    name: str
    use: str
    params: dict[str, Scalar | list[Scalar]] = Field(default_factory=dict)

    @field_validator("name")
    @classmethod
    def _column(cls, v: str) -> str:
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", v):
            raise ValueError("must be letters, digits or '_' (it names a column)")
        return v


class WorkloadSpec(BaseModel):
    """Workload kind, params (a list value is a grid axis) and zipped axes."""

    model_config = ConfigDict(extra="allow", frozen=True)
    kind: str = "synthetic"
    zip: list[list[str]] = Field(default_factory=list)
    #: Your own generator, "file.py:fn" or "module:fn": fn(rng, **params) -> job table.
    use: str | None = None

    def params(self) -> dict[str, Any]:
        return dict(self.model_extra or {})


class ReplicationsSpec(_Model):
    n: int | None = Field(default=None, ge=1)
    metric: str | None = None
    rel_halfwidth: float | None = Field(default=None, gt=0, lt=1)
    min: int = Field(default=5, ge=2)
    max: int = Field(default=200, ge=2)
    batch: int = Field(default=5, ge=1)

    @model_validator(mode="after")
    def _one_mode(self):
        adaptive = self.metric is not None or self.rel_halfwidth is not None
        if self.n is not None and adaptive:
            raise ValueError("give either n, or metric + rel_halfwidth (adaptive), not both")
        if self.n is None and not adaptive:
            raise ValueError("give n (a fixed count) or metric + rel_halfwidth (adaptive)")
        if adaptive and (self.metric is None or self.rel_halfwidth is None):
            raise ValueError("adaptive replications need both metric and rel_halfwidth")
        if self.min > self.max:
            raise ValueError(f"min ({self.min}) is larger than max ({self.max})")
        return self

    @property
    def adaptive(self) -> bool:
        return self.n is None


class OutputsSpec(_Model):
    dir: str | None = None
    per_job: bool = False


class TrackingSpec(_Model):
    enabled: bool = True
    uri: str | None = None  # None: $MLFLOW_TRACKING_URI, else sqlite:///mlflow.db
    experiment: str | None = None


class ExecutionSpec(_Model):
    address: str | None = None
    num_cpus: int | None = Field(default=None, ge=1)  # local Ray only: CPUs to start with
    max_in_flight: int | None = Field(default=None, ge=1)
    cpus_per_task: float = Field(default=1.0, gt=0)
    retries: int = Field(default=3, ge=0)
    task_jobs: int = Field(default=50_000, ge=1)  # pack instances until a task simulates this many job-runs
    #: "fast": compiled kernels for the built-in queue policies (same numbers);
    #: "reference": always the readable Python engine (schedlab.engines.ENGINE_PATHS).
    engine_path: Literal["fast", "reference"] = "fast"


class SweepSpec(_Model):
    name: str
    engine: str
    seed: int = Field(default=0, ge=0)
    workload: WorkloadSpec = Field(default_factory=WorkloadSpec)
    policies: list[Union[str, PolicyEntry]] = Field(min_length=1)
    metrics: list[MetricEntry] = Field(default_factory=list)
    system: dict[str, ParamValue] = Field(default_factory=dict)  # engine's system params (e.g. servers)
    replications: ReplicationsSpec = Field(default_factory=lambda: ReplicationsSpec(n=1))
    outputs: OutputsSpec = Field(default_factory=OutputsSpec)
    tracking: TrackingSpec = Field(default_factory=TrackingSpec)
    execution: ExecutionSpec = Field(default_factory=ExecutionSpec)

    @field_validator("name")
    @classmethod
    def _slug(cls, v: str) -> str:
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", v):
            raise ValueError("must be letters, digits, '.', '_' or '-' (it names a directory)")
        return v

    #: The folder `use = "file.py:..."` paths are relative to (the spec file's; else the cwd).
    _base_dir: Path = PrivateAttr(default_factory=Path.cwd)

    @property
    def base_dir(self) -> Path:
        return self._base_dir

    def policy_entries(self) -> list[PolicyEntry]:
        return [PolicyEntry(name=p) if isinstance(p, str) else p for p in self.policies]

    def results_dir(self) -> Path:
        return Path(self.outputs.dir) if self.outputs.dir else Path("results") / self.name

    def experiment(self) -> str:
        return self.tracking.experiment or self.name

    def result_defining(self) -> dict[str, Any]:
        """The part of the spec that determines the results (not where or how
        they are computed): changing it under an existing results dir is an
        error unless --fresh."""
        data = self.model_dump(mode="json")
        keep = ("name", "engine", "seed", "workload", "policies", "system", "replications")
        out = {k: data[k] for k in keep}
        if self.metrics:  # only when set: the spec hashes of earlier results dirs stay valid
            out["metrics"] = data["metrics"]
        out["per_job"] = self.outputs.per_job
        return out


def _path(loc: tuple) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part in ("str", "PolicyEntry", "function-after[_slug(), str]") or "[" in str(part):
            continue  # pydantic's union-branch labels are noise to a user
        else:
            out += f".{part}" if out else str(part)
    return out or "(top level)"


def parse_spec(data: dict[str, Any], source: str = "spec", base_dir: str | Path | None = None) -> SweepSpec:
    """Validate a spec dict (from TOML) completely, or raise one UserError.
    ``base_dir``: the folder relative ``use`` paths start from (default: the
    current directory)."""
    try:
        spec = SweepSpec.model_validate(data)
        if base_dir is not None:
            spec._base_dir = Path(base_dir).resolve()
    except ValidationError as err:
        first = err.errors()[0]
        msg = first["msg"].removeprefix("Value error, ")
        if first["type"] == "extra_forbidden":
            msg = "unknown field"
        elif first["type"] == "missing":
            msg = "required field is missing"
        raise UserError(f"{source}: {_path(first['loc'])}: {msg}") from None
    # Engine, policies and every workload grid point: checked by plan expansion.
    from schedlab.platform.plan import build_plan

    build_plan(spec, source)
    return spec


def load_spec(path: str | Path) -> SweepSpec:
    path = Path(path)
    try:
        with path.open("rb") as fh:
            data = tomllib.load(fh)
    except FileNotFoundError:
        raise UserError(f"{path}: no such file") from None
    except tomllib.TOMLDecodeError as err:
        raise UserError(f"{path}: not valid TOML: {err}") from None
    return parse_spec(data, str(path), path.parent)
