"""Typed parameters of policies, workload generators, trace readers and
metrics, declared by their signatures.

A parameter is a keyword argument with a default, typed by its annotation::

    class AgedSRPT(queue.Policy):
        def __init__(self, server, *, alpha: float = 0.5, floor: int = 1) -> None: ...

``validate`` checks every value of a spec (every grid point) against these
declarations, so a wrong name or type fails before anything runs, naming the
field (``policies[3].params.alpha``). Annotations may carry pydantic
constraints (``Annotated[float, Field(gt=0)]``) and ``Literal[...]`` choices.
Without an annotation the default's type is used (a float default accepts
ints). A class or function may add a ``check_params(**params)`` classmethod /
attribute raising ``ValueError`` for rules that span parameters.
"""

from __future__ import annotations

import inspect
import math
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from schedlab.errors import Collector, UserError, did_you_mean


@dataclass(frozen=True)
class Param:
    name: str
    default: Any
    annotation: Any  # inspect.Parameter.empty when not annotated

    @property
    def is_integer(self) -> bool:
        """Declared ``int``, bare or constrained (``Annotated[int, Field(ge=1)]``):
        its result column is int64, not float64."""
        tp = self.annotation
        if typing.get_origin(tp) is typing.Annotated:
            tp = typing.get_args(tp)[0]
        return tp in (int, "int")


def declared(target: Callable[..., Any], skip: int = 0) -> dict[str, Param]:
    """The keyword parameters of ``target`` (a class: its ``__init__``),
    after the first ``skip`` positional ones (a policy's engine handle, a
    generator's rng, a reader's path)."""
    # mypy reads `target.__init__` as an instance's bound method (unsound for subclasses); target is a class here.
    fn = target.__init__ if isinstance(target, type) else target  # type: ignore[misc]
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return {}
    try:
        hints = typing.get_type_hints(fn, include_extras=True)
    except Exception:  # noqa: BLE001 - unresolvable forward refs: fall back to the raw annotations
        hints = {}
    out: dict[str, Param] = {}
    params = [p for p in sig.parameters.values() if p.name != "self"]
    positional = 0
    for p in params:
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and positional < skip:
            positional += 1
            continue
        out[p.name] = Param(p.name, p.default, hints.get(p.name, p.annotation))
    return out


def _type_of(param: Param) -> Any:
    if param.annotation is not inspect.Parameter.empty:
        return param.annotation
    d = param.default
    if d is inspect.Parameter.empty or d is None:
        return Any
    if isinstance(d, bool):
        return bool
    if isinstance(d, float):
        return float
    return type(d)


_ADAPTERS: dict[Any, Any] = {}


def _adapter(tp: Any) -> Any:
    from pydantic import TypeAdapter

    key = repr(tp)
    if key not in _ADAPTERS:
        _ADAPTERS[key] = TypeAdapter(tp)
    return _ADAPTERS[key]


def check_value(param: Param, value: Any) -> None:
    """Raise ValueError (the message is the user's) if ``value`` does not fit
    the declared type. Strict: "1" is not a number, 1.5 is not an int, but an
    int is a float."""
    from pydantic import ValidationError

    tp = _type_of(param)
    if tp is Any:
        return
    if isinstance(value, float) and not math.isfinite(value) and tp in (float, int):
        raise ValueError(f"must be a finite number; got {value!r}")
    try:
        _adapter(tp).validate_python(value, strict=True)
    except ValidationError as err:
        first = err.errors()[0]
        raise ValueError(f"{first['msg'][0].lower()}{first['msg'][1:]}; got {value!r}") from None
    except Exception:  # noqa: BLE001 - an annotation pydantic cannot check: accept
        return


def check_params(
    target: Callable[..., Any], params: dict[str, Any], where: str, skip: int = 0, what: str = "policy", sep: str = "."
) -> None:
    """Check the names and values of ``params`` (one grid point) against
    ``target``'s declaration; ``where`` is the spec field of the params
    table (``spec.toml: policies[2].params``)."""
    decl = declared(target, skip)
    label = getattr(target, "name", None) or getattr(target, "__name__", repr(target))
    errors = Collector()  # every unknown name, bad value and missing name: one line each
    for name, value in params.items():
        if name not in decl:
            takes = f"takes: {', '.join(sorted(decl))}" if decl else "takes no parameters"
            errors.add(f"{where}{sep}{name}: {what} {label!r} {takes}{did_you_mean(name, decl)}")
            continue
        try:
            check_value(decl[name], value)
        except ValueError as err:
            errors.add(f"{where}{sep}{name}: {err}")
    for n, p in decl.items():
        if p.default is inspect.Parameter.empty and n not in params:
            errors.add(f"{where}{sep}{n}: required by {what} {label!r}")
    errors.raise_any()
    extra_check = getattr(target, "check_params", None)
    if callable(extra_check):
        try:
            extra_check(**params)
        except (ValueError, TypeError) as err:
            raise UserError(f"{where}: {err}") from None


def describe(target: Callable[..., Any], skip: int = 0) -> str:
    """``alpha: float = 0.5, floor: int = 1`` for listings."""
    parts = []
    for p in declared(target, skip).values():
        tp = _type_of(p)
        name = getattr(tp, "__name__", None) or repr(tp).replace("typing.", "")
        default = "" if p.default is inspect.Parameter.empty else f" = {p.default!r}"
        parts.append(f"{p.name}: {name}{default}")
    return ", ".join(parts)


__all__ = ["Param", "check_params", "check_value", "declared", "describe"]
