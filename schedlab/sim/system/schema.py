"""The ``[system]`` parameter machinery: a parameter (:class:`Param` and its
builders ``integer``, ``number``, ``numbers_per_resource``, ``choice``,
``flag``), a rule across fields (:class:`Rule`) and an engine's table of
them (:class:`SystemSchema`), checked at plan time (a spec's grid) and at
run time (one call). Why a small strict checker rather than pydantic: the
package docstring (``schedlab.sim.system``). Split from the engines'
declarations, which are data written with it."""

from __future__ import annotations

import itertools
import math
import numbers
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from schedlab.errors import Collector, UserError, did_you_mean

Columns = Callable[[], "frozenset[str] | None"]  # the job table's columns, None if unknown (lazy)


def _show(value: Any) -> str:
    """A value as the user wrote it in TOML (true, not True)."""
    if isinstance(value, (bool, np.bool_)):
        return "true" if value else "false"
    return repr(value)


def _is_int(v: Any) -> bool:
    return isinstance(v, numbers.Integral) and not isinstance(v, bool)


def is_number(v: Any) -> bool:
    """A finite real (int or float, numpy ones too), never a bool."""
    return isinstance(v, numbers.Real) and not isinstance(v, bool) and math.isfinite(v)


@dataclass(frozen=True)
class Param:
    """One system parameter: ``rule`` is the text after "must be" in an error
    and states exactly what ``accepts`` accepts. ``zero`` says what 0 means
    when 0 is a sentinel ("" if it is not); Python callers of ``run_table``
    may spell that sentinel ``None``."""

    name: str
    default: Any
    rule: str
    accepts: Callable[[Any], bool]
    zero: str = ""
    doc: str = ""
    #: Declared integer: its result column (system_<name>) is Int64.
    integer: bool = False
    #: The largest value that still makes sense (``accepts`` refuses more), beyond
    #: which a value is a mistake, not a setting: its error says so on its own.
    most: float | None = None

    def check(self, value: Any, path: str) -> None:
        if not self.accepts(value):
            if self.most is not None and is_number(value) and value > self.most:
                raise UserError(f"{path}: must be at most {self.most:g}; got {_show(value)}")
            raise UserError(f"{path}: must be {self.rule}; got {_show(value)}")


def _bounds(ge=None, gt=None, le=None) -> tuple[str, Callable[[float], bool]]:
    if gt is not None and le is not None:
        return f"in ({gt:g}, {le:g}]", lambda v: gt < v <= le
    if gt is not None:
        return f"> {gt:g}", lambda v: v > gt
    if ge is not None:
        return f">= {ge:g}", lambda v: v >= ge
    return "", lambda v: True


def _at_most(most: float | None) -> Callable[[Any], bool]:
    return (lambda v: True) if most is None else (lambda v: v <= most)


def integer(name: str, default: int, *, ge: int, most: int | None = None, zero: str = "", doc: str = "") -> Param:
    """``most``: the largest value that makes sense (`Param.most`)."""
    text, ok = _bounds(ge=ge)
    rule = f"an integer {text}" + (f" (0: {zero})" if zero else "")
    below = _at_most(most)
    return Param(name, default, rule, lambda v: _is_int(v) and ok(v) and below(v), zero, doc, integer=True, most=most)


def number(
    name: str, default: float, *, ge=None, gt=None, le=None, most: float | None = None, zero: str = "", doc: str = ""
) -> Param:
    """``le``: part of the rule (a fraction's 1); ``most``: the largest value that makes sense (`Param.most`)."""
    text, ok = _bounds(ge, gt, le)
    rule = f"a number {text}" + (f" (0: {zero})" if zero else "")
    below = _at_most(most)
    return Param(name, default, rule, lambda v: is_number(v) and ok(v) and below(v), zero, doc, most=most)


def numbers_per_resource(name: str, default: float, *, gt: float, doc: str = "") -> Param:
    """A number, or a non-empty list of numbers (one per resource), each
    checked as ``number`` would."""
    text, ok = _bounds(gt=gt)

    def accepts(v):
        if is_number(v):
            return ok(v)
        if isinstance(v, (list, tuple)) or (isinstance(v, np.ndarray) and v.ndim == 1):
            return len(v) > 0 and all(is_number(x) and ok(x) for x in v)
        return False

    return Param(name, default, f"a number {text} or a list of numbers {text} (one per resource)", accepts, doc=doc)


def choice(name: str, default: str, options: tuple[str, ...], doc: str = "") -> Param:
    return Param(
        name,
        default,
        "one of " + ", ".join(repr(o) for o in options),
        lambda v: isinstance(v, str) and v in options,
        doc=doc,
    )


def flag(name: str, default: bool, doc: str = "") -> Param:
    return Param(name, default, "true or false", lambda v: isinstance(v, (bool, np.bool_)), doc=doc)


@dataclass(frozen=True)
class Rule:
    """A rule across fields (or fields and the job table). ``broken(point,
    columns)`` gets one grid point with defaults filled in (sentinel ``None``
    read as 0) and returns what ``field`` must be, or None if the rule holds.
    ``reads_table``: the rule calls ``columns()``; it is checked at plan time
    per workload point, and must return None when ``columns()`` is None."""

    field: str
    text: str  # the rule in words, for documentation and reports
    broken: Callable[[Mapping[str, Any], Columns], str | None]
    reads_table: bool = False


def _no_table() -> None:
    """The columns argument of rules checked without a job table."""
    return None


@dataclass(frozen=True)
class SystemSchema:
    """An engine's ``[system]`` table: its parameters and rules."""

    engine: str
    params: tuple[Param, ...] = ()
    rules: tuple[Rule, ...] = ()
    #: ``fits(jobs, point)``: for one grid point with defaults filled in whose
    #: ``oversize`` is "error", a ``Misfit`` when a job of the table cannot
    #: fit the empty machine, else None -- the engine's own rule (the
    #: engines call the same helpers: units_needed, tasks_per_node).
    fits: Callable[[Any, Mapping[str, Any]], Any] | None = None
    _index: dict[str, Param] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_index", {p.name: p for p in self.params})

    def defaults(self) -> dict[str, Any]:
        return {p.name: p.default for p in self.params}

    def describe(self) -> list[str]:
        """One line per parameter and rule, as declared (docs, reports)."""
        lines = [
            f"{p.name}: {p.rule}{'' if p.most is None else f', at most {p.most:g}'} (default {_show(p.default)}) "
            f"-- {p.doc}"
            for p in self.params
        ]
        return lines + [f"rule: {r.text}{' (reads the job table)' if r.reads_table else ''}" for r in self.rules]

    def __getitem__(self, name: str) -> Param:
        return self._index[name]

    # ---- plan time: a spec's [system] table, list values being grid axes ----

    def check_spec(self, table: Mapping[str, Any], where: str) -> None:
        """Unknown names, every value of every grid axis, then the rules that
        need no job table at every grid point. ``where``: e.g. ``spec.toml:
        system``; errors name ``where.field`` or ``where.field[i]``."""
        errors = Collector()  # every unknown name and every bad value: one line each
        allowed = ", ".join(self._index) or "none"
        for name in sorted(set(table) - set(self._index)):
            errors.add(
                f"{where}.{name}: unknown system parameter for engine {self.engine!r}; allowed: {allowed}"
                + did_you_mean(name, self._index)
            )
        for name, value in table.items():
            values = value if isinstance(value, list) else [value]
            for i, v in enumerate(values):
                if name in self._index:
                    with errors.check():
                        self[name].check(v, f"{where}.{name}[{i}]" if isinstance(value, list) else f"{where}.{name}")
        errors.raise_any()
        own = [r for r in self.rules if not r.reads_table]
        for point, path in self._grid(table, where):
            self._apply(own, point, path, _no_table)

    def check_workload(self, table: Mapping[str, Any], columns: Columns, where: str) -> None:
        """The rules that read the job table, at every grid point of a
        checked ``table``, for one workload point whose table has ``columns``."""
        rules = [r for r in self.rules if r.reads_table]
        if rules:
            for point, path in self._grid(table, where):
                self._apply(rules, point, path, columns)

    def _grid(self, table: Mapping[str, Any], where: str) -> Iterator[tuple[dict[str, Any], Callable]]:
        axes = [(name, value) for name, value in table.items() if isinstance(value, list)]
        for idx in itertools.product(*(range(len(v)) for _, v in axes)):
            point = {**self.defaults(), **table}
            at = dict(zip((n for n, _ in axes), idx))
            point.update({n: table[n][i] for n, i in at.items()})

            def path(name: str, at=at) -> tuple[str, bool]:
                return (f"{where}.{name}[{at[name]}]" if name in at else f"{where}.{name}"), name in table

            yield point, path

    def _apply(self, rules, point: Mapping[str, Any], path, columns: Columns) -> None:
        for rule in rules:
            need = rule.broken(point, columns)
            if need is not None:
                where, given = path(rule.field)
                raise UserError(
                    f"{where}: must be {need}; got {_show(point[rule.field])}{'' if given else ' (the default)'}"
                )

    # ---- run time: one call's keyword arguments ----

    def check_call(self, values: Mapping[str, Any], where: str, columns=None) -> dict[str, Any]:
        """Check one engine call's system arguments (``where``: e.g. ``packing
        engine``) and every rule, the table rules against ``columns`` (the job
        table's). ``None`` is accepted for a parameter whose 0 is a sentinel
        and comes back as 0; returns the values."""
        out = dict(values)
        for name, value in values.items():
            p = self[name]
            if value is None and p.zero:
                out[name] = 0
            else:
                p.check(value, f"{where}: {name}")
        point = {**self.defaults(), **out}
        cols = frozenset(columns) if columns is not None else None
        self._apply(self.rules, point, lambda name: (f"{where}: {name}", True), lambda: cols)
        return out
