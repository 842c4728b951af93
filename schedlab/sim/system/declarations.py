"""What the engines' ``[system]`` declarations share (each engine declares its
own in its package: ``schedlab.engines.<engine>.sim.system``, named by its
registry entry, ``Engine.system``): the bounds every machine size and duration
obeys, and the shape of an oversize rule's answer (``SystemSchema.fits``)."""

from __future__ import annotations

#: The largest machine a [system] table may describe (servers, nodes,
#: processors, tasks per node): beyond it an engine's per-unit arrays alone
#: outgrow a machine's memory, so the value is a mistake.
MAX_UNITS = 10**7
#: The longest span of simulated seconds a [system] duration may be (about
#: 32 years): a penalty or an epoch beyond it dwarfs any trace, and near a
#: float's range adding it to the clock loses the clock (the run never ends).
MAX_SECONDS = 1e9

#: What ``SystemSchema.fits`` returns for a job that does not fit: (the
#: field holding the machine size, the machine in words, the job's id, what
#: it needs in words); field "" for a job table the engine cannot read.
Misfit = tuple[str, str, "int | None", str]


def missing_columns(jobs, engine: str, columns: tuple[str, ...]) -> Misfit | None:
    """The Misfit of a job table without one of ``columns`` (its engine's required ones), or None."""
    gone = [c for c in columns if c not in jobs.columns]
    if gone:
        return (
            "",
            (
                f"the {engine} engine needs a {gone[0]!r} column; this workload's job table has "
                f"{', '.join(jobs.columns)}"
            ),
            None,
            "",
        )
    return None


__all__ = ["MAX_SECONDS", "MAX_UNITS", "Misfit", "missing_columns"]
