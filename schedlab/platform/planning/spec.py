"""Sweep specs: TOML in, a validated typed model out.

Every mistake becomes a line naming the file and the field path
(``psbs.toml: workload.shape[2]: must be a number > 0; got -1``) -- the spec
is checked completely (engine, policies, every grid point of the workload,
the trace files and whether the jobs fit the machine) before anything is run
or written, and every independent mistake is reported: one is a `UserError`,
several a `UserErrors` (one line each).

A spec (this example is valid as written: ``tests/test_docs.py`` parses and
plans it, so every field shown here exists)::

    name = "psbs-shape"          # results/<name>, MLflow experiment <name>
    description = "PSBS against SRPT and PS as the size distribution's shape varies"
    engine = "queue"
    seed = 1
    policies = ["PS", "SRPT", "PSBS"]    # or [[policies]] tables: name, params, use
    # your own class: {name = "AgedSRPT", use = "mypolicies.py:AgedSRPT", params = {alpha = [0.1, 1.0]}}
    # (use: a file relative to this spec's folder, or "module:Name"; see docs/extending.md)

    [workload]                   # kind + params; a list is a grid axis
    kind = "synthetic"           # or use = "gen.py:fn" (your generator; its params here)
    njobs = 1000
    shape = [0.125, 0.25, 0.5]
    load = [0.5, 0.9, 0.99]
    sigma = 0.5
    zip = [["shape", "load"]]    # optional: zip these axes instead of crossing them

    [[metrics]]                  # optional extra summary columns (schedlab.api.metrics)
    name = "sojourn_p999"
    use = "quantile"
    params = {column = "sojourn", q = 0.999}

    # [system]                   # the engine's system parameters (gridable); the queue
    # servers = 5                # engine has none, packing: servers, capacity, epoch, sample_every

    [replications]               # either a fixed n ...
    n = 10
    # ... or adaptive: rounds until the 95 % CI half-width of `metric` is within
    # rel_halfwidth of its mean for every configuration
    # metric = "mst"; rel_halfwidth = 0.05; min = 5; max = 200; batch = 5
    # ... on a paired target: every policy's paired interval of the difference
    # to the baseline within rel_halfwidth of the baseline's mean (ratio = true:
    # half-width of the mean log ratio <= log(1 + rel_halfwidth))
    # target = "paired"; baseline = "PS"; ratio = false
    # ... or ranking and selection (Kim & Nelson's KN, per workload point):
    # mode = "select-best"; metric = "mst"; delta = 0.1; confidence = 0.95;
    # minimize = true; min = 10 (n0); max = 200; batch = 1

    [outputs]
    dir = "results/psbs-shape"
    per_job = false
    # warmup = "mser5"           # queue engine: MSER-5 warm-up deletion, same cut for every policy of an instance

    [tracking]
    enabled = true
    uri = "sqlite:///mlflow.db"
    experiment = "psbs-shape"

    [execution]
    backend = "auto"             # "auto": in-process or a local pool for small work, else Ray; "local"; "ray"
    # address = "ray://head:10001"   # a Ray cluster (default: local Ray when Ray runs)
    max_in_flight = 6
    cpus_per_task = 1
    retries = 3
    # engine_path = "reference": run even built-in queue policies (and packing's
    # FIFO-FF, BF-J, BF-S, BF-J/S, batch's FCFS, EASY) on the Python reference
    # engine (default "fast": compiled kernels, the same numbers)
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, field_validator, model_validator

from schedlab.errors import close_names, did_you_mean

if TYPE_CHECKING:
    from pydantic_core import ErrorDetails

#: Ceilings beyond which a count or a wait is a mistake, not a setting (issue #41: no spec ends in a
#: traceback). Replications, trials and KN's stages: a million instances per configuration is no sweep.
MAX_REPLICATIONS = 1_000_000
#: CPUs of a task, of local Ray, and tasks in flight: more than any machine or cluster has.
MAX_CPUS = 100_000
#: Retries of a failed task.
MAX_RETRIES = 1000
#: A budget or a timeout in seconds (about 3 years): the OS timers and waits take no more (time_t).
MAX_WAIT_SECONDS = 1e8

#: A pydantic error location (field names and list indices).
_Loc = tuple[int | str, ...]

Scalar = bool | int | float | str
#: A list is a grid axis; a list inside it is one list-valued point ([[0.4, 0.6]]).
ParamValue = Scalar | list[Scalar | list[Scalar]]


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
    n: int | None = Field(default=None, ge=1, le=MAX_REPLICATIONS)
    metric: str | None = None
    rel_halfwidth: float | None = Field(default=None, gt=0, lt=1)
    min: int = Field(default=5, ge=2, le=MAX_REPLICATIONS)
    max: int = Field(default=200, ge=2, le=MAX_REPLICATIONS)
    batch: int = Field(default=5, ge=1, le=MAX_REPLICATIONS)
    #: Adaptive target: None / "each" (every configuration's own CI of the
    #: mean) or "paired" (every policy's paired interval to ``baseline``).
    target: Literal["each", "paired"] | None = None
    baseline: str | None = None
    ratio: bool | None = None  # paired target on policy / baseline (log scale)
    #: "select-best": Kim & Nelson's (2001) fully sequential procedure KN.
    mode: Literal["select-best"] | None = None
    delta: float | None = Field(default=None, gt=0, allow_inf_nan=False)  # indifference zone, in the metric's units
    confidence: float | None = Field(default=None, gt=0, lt=1)  # 1 - alpha (default 0.95)
    minimize: bool | None = None  # default true: smaller is better
    #: The first replication index (instances start..start+n-1, or from start under
    #: select-best): a search's final selection takes instances its trials never saw.
    start: int | None = Field(default=None, ge=0, le=MAX_REPLICATIONS)

    #: Fields added after results dirs existed: left out of the spec hash while unset.
    LATE: ClassVar[tuple[str, ...]] = (
        "target",
        "baseline",
        "ratio",
        "mode",
        "delta",
        "confidence",
        "minimize",
        "start",
    )

    @model_validator(mode="after")
    def _one_mode(self) -> ReplicationsSpec:
        if self.mode == "select-best":
            if self.n is not None:
                raise ValueError("n: select-best decides the replications itself; leave n out")
            for name in ("rel_halfwidth", "target", "baseline", "ratio"):
                if getattr(self, name) is not None:
                    raise ValueError(
                        f'{name}: not used with mode = "select-best" (it takes metric, delta, '
                        f"confidence, minimize, min, max, batch)"
                    )
            if self.metric is None:
                raise ValueError("metric: select-best needs the metric to select on")
            if self.delta is None:
                raise ValueError("delta: select-best needs the indifference zone delta (in the metric's units)")
        else:
            for name in ("delta", "confidence", "minimize"):
                if getattr(self, name) is not None:
                    raise ValueError(f'{name}: only with mode = "select-best"')
            adaptive = self.metric is not None or self.rel_halfwidth is not None
            if self.n is not None and adaptive:
                raise ValueError("give either n, or metric + rel_halfwidth (adaptive), not both")
            if self.n is None and not adaptive:
                raise ValueError("give n (a fixed count) or metric + rel_halfwidth (adaptive)")
            if adaptive and (self.metric is None or self.rel_halfwidth is None):
                raise ValueError("adaptive replications need both metric and rel_halfwidth")
            if self.target == "paired" and self.baseline is None:
                raise ValueError('baseline: target = "paired" needs the baseline policy')
            if self.target != "paired":
                for name in ("baseline", "ratio"):
                    if getattr(self, name) is not None:
                        raise ValueError(f'{name}: only with target = "paired"')
            if self.n is not None and self.target is not None:
                raise ValueError("target: only with adaptive replications (metric + rel_halfwidth), not n")
            if self.start is not None and self.n is None:
                raise ValueError('start: only with a fixed n or mode = "select-best"')
        if self.min > self.max:
            raise ValueError(f"min ({self.min}) is larger than max ({self.max})")
        return self

    @property
    def adaptive(self) -> bool:
        return self.n is None

    @property
    def select_best(self) -> bool:
        return self.mode == "select-best"

    @property
    def first_round(self) -> int:
        """Replications of the first round: ``n`` when fixed, else ``min``."""
        return self.n if self.n is not None else self.min

    @property
    def first(self) -> int:
        """The first replication index (``start``, default 0)."""
        return self.start or 0

    @property
    def step(self) -> int:
        """Replications per round after the first: ``batch``; select-best
        takes one at a time (KN's own rule) unless batch is given."""
        return self.batch if (not self.select_best or "batch" in self.model_fields_set) else 1


class SearchParam(_Model):
    """One searched parameter: a range (``low``, ``high``; ``log`` scale;
    ``step`` for a discrete range) or ``choices``."""

    low: float | None = Field(default=None, allow_inf_nan=False)
    high: float | None = Field(default=None, allow_inf_nan=False)
    log: bool = False
    step: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    choices: list[Scalar] | None = Field(default=None, min_length=1)

    @model_validator(mode="after")
    def _range_or_choices(self) -> SearchParam:
        if self.choices is not None:
            for name in ("low", "high", "step"):
                if getattr(self, name) is not None:
                    raise ValueError(f"{name}: give either choices or low + high, not both")
            if self.log:
                raise ValueError("log: only with low + high")
            return self
        if self.low is None or self.high is None:
            raise ValueError("give low and high (a range) or choices")
        if not self.low < self.high:
            raise ValueError(f"low ({self.low:g}) must be smaller than high ({self.high:g})")
        if self.log and self.low <= 0:
            raise ValueError(f"log: a log scale needs low > 0 (got {self.low:g})")
        if self.log and self.step is not None:
            raise ValueError("step: not with log = true (Optuna samples a log range continuously)")
        return self


class SearchSelect(_Model):
    """The final selection: the ``top`` trials re-run on fresh instances,
    Kim & Nelson's KN picks the best (with ``delta``; without it every
    candidate gets all ``replications`` and the verdict is paired intervals
    to the best, Bonferroni-adjusted)."""

    top: int = Field(default=5, ge=2, le=MAX_REPLICATIONS)
    replications: int = Field(default=30, ge=2, le=MAX_REPLICATIONS)  # fresh instances per candidate (KN's max)
    n0: int = Field(default=10, ge=2, le=MAX_REPLICATIONS)  # KN's first stage
    confidence: float = Field(default=0.95, gt=0, lt=1)
    delta: float | None = Field(
        default=None, gt=0, allow_inf_nan=False
    )  # KN's indifference zone, in the metric's units
    #: A named setting of the searched parameters, run on the same fresh instances.
    baseline: dict[str, Scalar] | None = None

    @model_validator(mode="after")
    def _stage(self) -> SearchSelect:
        if self.n0 > self.replications:
            raise ValueError(f"n0 ({self.n0}) is larger than replications ({self.replications})")
        return self


class SearchSpec(_Model):
    """Parameter search (schedlab.platform.search): trials from an Optuna
    sampler, each one configuration on the same ``replications`` instances."""

    sampler: Literal["tpe", "cmaes", "gp", "random", "grid", "qmc"] = "tpe"
    metric: str
    direction: Literal["minimize", "maximize"] = "minimize"
    trials: int = Field(ge=1, le=MAX_REPLICATIONS)
    parallel: int = Field(default=1, ge=1, le=MAX_REPLICATIONS)  # trials asked, run and told together
    replications: int = Field(default=10, ge=1, le=MAX_REPLICATIONS)
    params: dict[str, SearchParam] = Field(min_length=1)
    select: SearchSelect = Field(default_factory=SearchSelect)

    #: Fields that change no trial's meaning: a changed one resumes the search (more trials, another selection).
    FREE: ClassVar[tuple[str, ...]] = ("trials", "select")


class OutputsSpec(_Model):
    dir: str | None = None
    per_job: bool = False
    #: Warm-up deletion of the leading jobs (queue engine): "mser5" (White 1997).
    warmup: Literal["mser5"] | None = None


class TrackingSpec(_Model):
    enabled: bool = True
    uri: str | None = None  # None: $MLFLOW_TRACKING_URI, else sqlite:///mlflow.db
    experiment: str | None = None


class ExecutionSpec(_Model):
    #: Where tasks run: "auto" (in the driver's process or a local pool when the
    #: work is small, else Ray; schedlab.platform.execution.backends), "local" or "ray".
    backend: Literal["auto", "local", "ray"] = "auto"
    address: str | None = None
    num_cpus: int | None = Field(default=None, ge=1, le=MAX_CPUS)  # local Ray only: CPUs to start with
    max_in_flight: int | None = Field(default=None, ge=1, le=MAX_CPUS)
    cpus_per_task: float = Field(default=1.0, gt=0, le=MAX_CPUS)
    retries: int = Field(default=3, ge=0, le=MAX_RETRIES)
    #: Pack instances until a task simulates this many job-runs; unset: tasks
    #: sized by measurement (schedlab.platform.execution.sizing, ~1 s of work each).
    task_jobs: int | None = Field(default=None, ge=1)
    #: "fast": compiled kernels for the built-in queue policies and the packing
    #: engine's FIFO-FF, BF-J, BF-S, BF-J/S (same numbers);
    #: "reference": always the readable Python engine (schedlab.engines.ENGINE_PATHS).
    engine_path: Literal["fast", "reference"] = "fast"
    #: Wall-clock seconds one simulation may take before it is stopped and
    #: recorded as a failure (schedlab.platform.execution.budget): a runaway
    #: policy fails its own configuration, never the sweep. The default is
    #: budget.DEFAULT_SIM_BUDGET_SECONDS (a test keeps the two equal).
    sim_budget_seconds: float = Field(default=3600.0, gt=0, le=MAX_WAIT_SECONDS)
    #: Seconds ``--address`` / ``address`` may take to join a cluster before the
    #: run ends with one line, exit 2 (schedlab.platform.execution.connect;
    #: connect.DEFAULT_CONNECT_TIMEOUT_SECONDS, kept equal by a test).
    connect_timeout_seconds: float = Field(default=60.0, gt=0, le=MAX_WAIT_SECONDS)


def warmup_applies(engine: str) -> bool:
    """``[outputs] warmup`` applies to ``engine`` (``Engine.warmup``); an
    engine not known yet (your own, loaded by the plan) is checked there."""
    from schedlab.engines import known_engines

    found = known_engines().get(engine)
    return found is None or found.warmup


class SweepSpec(_Model):
    name: str
    engine: str
    #: What the sweep is for (MLflow shows it on the experiment and the parent
    #: run). Not part of the results' identity. A spec file without one is
    #: described by its leading comment lines.
    description: str | None = None
    seed: int = Field(default=0, ge=0)
    workload: WorkloadSpec = Field(default_factory=WorkloadSpec)
    policies: list[str | PolicyEntry] = Field(min_length=1)
    metrics: list[MetricEntry] = Field(default_factory=list)
    system: dict[str, ParamValue] = Field(default_factory=dict)  # engine's system params (e.g. servers)
    replications: ReplicationsSpec = Field(default_factory=lambda: ReplicationsSpec(n=1))
    outputs: OutputsSpec = Field(default_factory=OutputsSpec)
    tracking: TrackingSpec = Field(default_factory=TrackingSpec)
    execution: ExecutionSpec = Field(default_factory=ExecutionSpec)
    #: Parameter search instead of a grid (docs/search.md).
    search: SearchSpec | None = None

    @field_validator("name")
    @classmethod
    def _slug(cls, v: str) -> str:
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", v):
            raise ValueError("must be letters, digits, '.', '_' or '-' (it names a directory)")
        return v

    @model_validator(mode="after")
    def _cross_fields(self) -> SweepSpec:
        reps = self.replications
        if reps.baseline is not None:
            entries = self.policy_entries()
            names = [e.name for e in entries]
            if reps.baseline not in names:
                raise ValueError(
                    f"replications.baseline: {reps.baseline!r} is not one of the spec's policies ({', '.join(names)})"
                )
            entry = entries[names.index(reps.baseline)]
            grid = [k for k, v in entry.params.items() if isinstance(v, list) and len(v) > 1]
            if grid:
                raise ValueError(
                    f"replications.baseline: {reps.baseline!r} has a grid of params ({', '.join(grid)}); "
                    f"the baseline must be one configuration"
                )
        if reps.select_best and len(self.policies) < 2:
            raise ValueError("replications.mode: select-best needs at least 2 policies")
        if self.search is not None:
            if "replications" in self.model_fields_set:
                raise ValueError(
                    "replications: a search sets its own (search.replications per trial, "
                    "search.select.replications for the final selection)"
                )
            if len(self.policies) != 1:
                raise ValueError("policies: a search tunes one policy; name exactly one")
        if self.outputs.warmup is not None and not warmup_applies(self.engine):
            raise ValueError(
                f"outputs.warmup: warm-up deletion works on the queue engine's per-job sojourn times; "
                f"engine {self.engine!r} has none"
            )
        return self

    #: The folder `use = "file.py:..."` paths are relative to (the spec file's; else the cwd).
    _base_dir: Path = PrivateAttr(default_factory=Path.cwd)
    #: The plan `parse_spec` built to check this spec, with the identity of what it was built
    #: from (`plan.plan_of` reuses it when the spec has not changed since: no second expansion).
    _checked_plan: tuple[str, Any] | None = PrivateAttr(default=None)

    @property
    def base_dir(self) -> Path:
        return self._base_dir

    def place(self, base_dir: str | Path) -> None:
        """Relative ``use`` paths start from ``base_dir`` (the spec file's folder)."""
        self._base_dir = Path(base_dir).resolve()

    @property
    def checked_plan(self) -> tuple[str, Any] | None:
        """(`plan.plan_key`, plan) of the plan `validate.parse_spec` built to check this spec, or None."""
        return self._checked_plan

    def keep_checked_plan(self, key: str, plan: Any) -> None:
        """Keep the plan built to check this spec, with the key of what it was built from."""
        self._checked_plan = (key, plan)

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
        for k in ReplicationsSpec.LATE:  # absent while unset: earlier results dirs keep their spec hash
            if out["replications"].get(k) is None:
                out["replications"].pop(k, None)
        if self.replications.select_best:  # one at a time unless batch is given: part of the procedure
            out["replications"]["batch"] = self.replications.step
        if self.outputs.warmup is not None:  # it changes the steady-state metrics of every row
            out["warmup"] = self.outputs.warmup
        if self.metrics:  # only when set: the spec hashes of earlier results dirs stay valid
            out["metrics"] = data["metrics"]
        if self.search is not None:  # what the trials are; more trials or another selection only resume
            out["search"] = {k: v for k, v in data["search"].items() if k not in SearchSpec.FREE}
        out["per_job"] = self.outputs.per_job
        return out


def _path(loc: _Loc) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part in ("str", "PolicyEntry", "function-after[_slug(), str]") or "[" in str(part):
            continue  # pydantic's union-branch labels are noise to a user
        else:
            out += f".{part}" if out else str(part)
    return out or "(top level)"


#: Union-branch labels pydantic puts in an error's location (a policy is a name or a table).
_SCALAR_BRANCHES = ("str", "int", "float", "bool")
#: Spec fields build_plan reads: when these validate, the plan-level checks run
#: too, so one report lists the mistakes of both layers.
_PLAN_FIELDS = ("engine", "workload", "policies", "metrics", "system")


def _branch(loc: _Loc) -> tuple[_Loc, str | None]:
    """(location up to a union branch label, the label) or (loc, None)."""
    for i, part in enumerate(loc):
        if isinstance(part, str) and (part in _SCALAR_BRANCHES or part == "PolicyEntry" or "[" in part):
            return tuple(loc[:i]), part
    return tuple(loc), None


def _message(e: ErrorDetails, source: str) -> str:
    """One pydantic error as ``source: field.path: message``."""
    msg = e["msg"].removeprefix("Value error, ")
    named = re.match(r"^([a-z_]+(?:\.[a-z_]+)?): (.*)$", msg, re.S)
    if e["type"] == "value_error" and named:  # a cross-field rule names its field: put it in the path
        where = _path(e["loc"])
        field_ = named.group(1)
        path_ = field_ if "." in field_ or where == "(top level)" else f"{where}.{field_}"
        return f"{source}: {path_}: {named.group(2)}"
    if e["type"] == "extra_forbidden":
        loc = e["loc"]
        msg = "unknown field" + did_you_mean(str(loc[-1]), _fields_at(_branch(loc[:-1])[0]))
    elif e["type"] == "missing":
        msg = "required field is missing"
    return f"{source}: {_path(e['loc'])}: {msg}"


def _model_of(tp: Any) -> type[BaseModel] | None:
    """The model a field's annotation holds (``SearchParam`` of
    ``dict[str, SearchParam]``, ``PolicyEntry`` of ``list[str | PolicyEntry]``)."""
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        return tp
    for arg in get_args(tp):
        found = _model_of(arg)
        if found is not None:
            return found
    return None


def _is_container(tp: Any) -> bool:
    """A list or dict annotation (maybe inside an Optional / union): its next
    location part is an index or a key, not a field."""
    origin = get_origin(tp)
    return origin in (list, dict) or any(_is_container(a) for a in get_args(tp))


def _fields_at(loc: _Loc) -> list[str]:
    """The field names of the table at ``loc`` (a location without union
    labels): what an unknown key there may have meant."""
    model: type[BaseModel] | None = SweepSpec
    key_next = False
    for part in loc:
        if key_next:  # an index or a dict key: the element's model is the one already found
            key_next = False
            continue
        if model is None or not isinstance(part, str) or part not in model.model_fields:
            return []
        tp = model.model_fields[part].annotation
        model, key_next = _model_of(tp), _is_container(tp)
    return list(model.model_fields) if model is not None else []


def _pydantic_messages(err: ValidationError, source: str) -> list[str]:
    """Every error of a failed validation, one line each. A value that fails
    every branch of a union (a policy that is neither a name nor a valid
    table) is reported by one branch: the one for its type (a table's own
    field errors, not "should be a string"), else the first."""
    errors = err.errors()
    chosen: dict[_Loc, str] = {}
    for e in errors:
        at, label = _branch(e["loc"])
        if label is None or at in chosen:
            continue
        if (
            label in _SCALAR_BRANCHES
            and isinstance(e.get("input"), dict)
            and any(_branch(o["loc"])[0] == at and _branch(o["loc"])[1] not in _SCALAR_BRANCHES for o in errors)
        ):
            continue  # a table: its table branch speaks for it
        chosen[at] = label
    # A required field missing beside an unknown key that looks like it (``polices``): the unknown
    # key's line says both (unknown field; did you mean 'policies'?), so the missing line is left out.
    meant = {
        (*_branch(e["loc"][:-1])[0], name)
        for e in errors
        if e["type"] == "extra_forbidden"
        for name in close_names(str(e["loc"][-1]), _fields_at(_branch(e["loc"][:-1])[0]))
    }
    out = []
    for e in errors:
        at, label = _branch(e["loc"])
        if e["type"] == "missing" and at in meant:
            continue
        if label is None or chosen.get(at) == label:
            out.append(_message(e, source))
    return out
