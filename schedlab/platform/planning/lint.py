"""What is legal in a sweep spec but usually a mistake: `schedlab validate`,
`plan` and `run` print these as ``warning:`` lines and go on (exit 0; `run`
runs the sweep).

* An open queue at load >= 1 (an engine declaring ``unstable_load``: the
  queue; a workload point's ``load``): the arrival rate reaches the service rate, so no steady state exists --
  the MST grows with ``njobs`` instead of settling, and a figure shows the
  length of the run, not the policy. (Other engines' ``load`` is left alone:
  a packing or batch cluster's offered load is relative to a capacity the
  spec may change.)
* No ``[replications]`` table: one replication per configuration, which has
  no confidence interval and no p value; the spec says nothing about it.
"""

from __future__ import annotations

from typing import Any

from schedlab.platform.planning.spec import SweepSpec


def warnings(spec: SweepSpec, source: str = "spec") -> list[str]:
    """One line per likely mistake of a validated spec, each naming the place
    (``file: field: ...``). Read from the spec alone (the workload's ``load``
    values, a grid axis or one value; a kind's default load is below 1): no
    plan expansion needed."""
    out: list[str] = []
    from schedlab.engines import known_engines

    engine = known_engines().get(spec.engine)
    unstable = engine.unstable_load if engine is not None else None
    if unstable is not None:
        given: Any = spec.workload.params().get("load")
        values = given if isinstance(given, list) else [given]
        loads = sorted(
            {float(v) for v in values if isinstance(v, (int, float)) and not isinstance(v, bool) and v >= unstable}
        )
        if loads:
            out.append(
                f"{source}: workload.load: {', '.join(f'{v:g}' for v in loads)} >= {unstable:g}: an open queue "
                f"with arrivals at or above its service rate is unstable (no steady state; the MST grows with "
                f"njobs, so the results measure the run's length, not the policy)"
            )
    if "replications" not in spec.model_fields_set and spec.search is None:  # a search sets its own
        out.append(
            f"{source}: replications: not given, so n = 1: one replication per configuration, no confidence "
            f"interval and no p value; write [replications] n = 1 to mean it, or a larger n"
        )
    return out
