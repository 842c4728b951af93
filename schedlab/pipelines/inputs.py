"""Where a pipeline's inputs are: its traces under a data root, its trained agent in a folder.

The library stands apart from the repository (issue #37): a pipeline names a
trace relative to a data root and its agent relative to an agent folder, and
the caller says where those are -- `run.run_pipeline`'s ``data`` and
``agent`` (the command line's ``--data`` and ``--agent``), else the
environment (`DATA_ENV`, `AGENT_ENV`) -- never the place schedlab is installed
or checked out. A pipeline's TOML writes ``"{data}/lublin/lublin_256.swf.gz"``
and ``use = "{agent}/agent.py:Agent"`` in its sweeps (`substitute`); its
Python code asks `data_path` for a trace.

A root is written into the spec as given, joined with ``/`` and never made
absolute or normalised: both paths are part of the spec a results dir holds
(a run under other paths does not resume it), and a trace's path is part of
the configuration ids of the rows read from it (an agent's is not: its
code's digest is, `schedlab.usercode.CodeRef.identity`), so the same root
spelled the same way finds the rows of an earlier run. A root given for a run
holds only for that run's expansion of its specs (`using`: a context
variable, not a global).

A path that is not there is one `UserError` line naming the option, the
variable and the path tried, raised while the specs are expanded: before a
sweep is planned, before Ray starts.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from schedlab.errors import UserError

#: The environment variable naming the data folder: the one the Gymnasium environments look bare trace
#: names up in (``schedlab.gym.common.DATA_ENV``; not imported from there: that package needs gymnasium).
DATA_ENV = "SCHEDLAB_DATA"
#: The environment variable naming the folder of a pipeline's trained agent (agent.py and the data files it
#: declares, as ``schedlab gym export --out`` writes them).
AGENT_ENV = "SCHEDLAB_AGENT"


@dataclass(frozen=True)
class Input:
    """One kind of folder a pipeline's spec may name: ``{name}`` in a string of
    its sweeps, set by the command line's ``option`` or the variable ``env``."""

    name: str
    option: str
    env: str
    what: str  # what the folder holds, for the error
    #: the strings naming it are code references ``PATH:Name`` (`schedlab.usercode`): the path is before the colon
    reference: bool = False

    @property
    def placeholder(self) -> str:
        return "{" + self.name + "}"


#: The folders a pipeline's spec may name, by name.
INPUTS: dict[str, Input] = {
    "data": Input("data", "--data", DATA_ENV, "the traces"),
    "agent": Input("agent", "--agent", AGENT_ENV, "the trained agent (agent.py and its data files)", reference=True),
}


@dataclass(frozen=True)
class Root:
    """Where an input's folder is (``path``, as given) and who said so (``origin``:
    the option, the variable, or the default of the option), for the error naming it."""

    path: str
    origin: str


_ROOTS: contextvars.ContextVar[dict[str, Root] | None] = contextvars.ContextVar("pipeline_roots", default=None)


@contextlib.contextmanager
def using(**roots: str | Root | None) -> Iterator[None]:
    """Inside the block, the pipelines' ``{name}`` folders are ``roots`` (keys
    of `INPUTS`; a plain string's origin is the keyword itself; None: the
    environment decides, as outside any block)."""
    unknown = sorted(set(roots) - set(INPUTS))
    if unknown:
        raise TypeError(f"no pipeline input {unknown[0]!r}; inputs: {', '.join(INPUTS)}")
    chosen = {
        name: r if isinstance(r, Root) else Root(str(r), f"{name}=") for name, r in roots.items() if r is not None
    }
    for name, r in chosen.items():
        if not r.path.strip():
            raise UserError(f"{INPUTS[name].option}: must name a folder; got {r.path!r}")
    token = _ROOTS.set({**(_ROOTS.get() or {}), **chosen})
    try:
        yield
    finally:
        _ROOTS.reset(token)


def root(name: str) -> Root:
    """The folder of input ``name`` (`INPUTS`): the one `using` gave, else its
    environment variable's; neither is one error naming both."""
    spec = INPUTS[name]
    given = (_ROOTS.get() or {}).get(name)
    if given is not None:
        return given
    value = os.environ.get(spec.env, "")
    if value:
        return Root(value, f"${spec.env}")
    raise UserError(
        f"{spec.option}: this pipeline reads {spec.what}, and no folder was given: "
        f"give {spec.option} DIR or set {spec.env}"
    )


def joined(name: str, rel: str) -> str:
    """``rel`` below input ``name``'s folder, joined with ``/`` as the root was
    written (no ``..`` resolved, nothing made absolute: the string is part of ids)."""
    return f"{root(name).path.rstrip('/')}/{rel}"


def require(name: str, rel: str) -> str:
    """`joined`, and the path must exist (a code reference's file: its part
    before the colon), else one error line naming the option, the variable,
    where the root came from and the path tried."""
    spec = INPUTS[name]
    value = joined(name, rel)
    if spec.reference and ":" in rel:
        rel = rel.rpartition(":")[0]
    path = joined(name, rel)
    if not Path(path).expanduser().exists():
        where = root(name)
        raise UserError(
            f"{spec.option}: no such file or folder {path} ({spec.what}; the folder {where.path} is from "
            f"{where.origin}): give {spec.option} DIR or set {spec.env} to the folder holding {rel}"
        )
    return value


def data_path(rel: str) -> str:
    """A trace's path: ``rel`` below the data root (`root`), which must hold it (`require`)."""
    return require("data", rel)


def substitute(value: str, check: bool = True) -> str:
    """A string of a pipeline's sweep with its ``{name}`` folder (`INPUTS`) put in:
    ``"{data}/lublin/x.swf.gz"`` -> ``"../shared/data/lublin/x.swf.gz"``, checked
    to exist (`require`; ``check=False``: not, `joined`). A string not starting
    with a placeholder is returned as it is."""
    for name, spec in INPUTS.items():
        if value.startswith(spec.placeholder + "/"):
            rel = value.removeprefix(spec.placeholder + "/")
            return require(name, rel) if check else joined(name, rel)
    return value
