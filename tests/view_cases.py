"""One small results dir per engine (made without Ray, as ``tests/test_compare.make_results``)
and the checks a reader makes by looking at a page or a figure in Chromium: what the
colours mean, the axis titles and units, no text past the page's edge. Shared by
tests/test_views_look.py and benchmarks/view_screenshots.py (which writes the
screenshots to look at)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

#: Per engine: the spec's policies, [system], workload, the x axis of its figure and a metric.
CASES: dict[str, dict[str, Any]] = {
    "queue": {
        "policies": ["PS", "PSBS"],
        "system": {},
        "workload": {"kind": "synthetic", "njobs": 400, "shape": 0.25, "load": [0.5, 0.9]},
        "x": "load",
        "y": "mst",
    },
    "batch": {
        "policies": ["EASY", "FCFS"],
        "system": {"model": "nodes", "nodes": 16},
        "workload": {"kind": "lublin", "njobs": 150, "nodes": 16, "load": [0.6, 0.9]},
        "x": "load",
        "y": "wait_mean",
    },
    "packing": {
        "policies": ["BF-J/S", "VQS"],
        "system": {"servers": 3, "capacity": 1.0, "epoch": 1.0},
        "workload": {
            "kind": "packing",
            "slots": 600,
            "uniform_lo": 0.05,
            "uniform_hi": 0.4,
            "service": "geometric",
            "mean_service": 20,
            "intensity": [0.7, 0.9],
            "intensity_servers": 3,
        },
        "x": "intensity",
        "y": "wait_mean",
    },
    "dfrs": {
        "policies": ["Greedy*/OPT=MIN", "GreedyPM*/OPT=MIN"],
        "system": {"nodes": 8, "penalty": 30.0},
        "workload": {
            "kind": "lublin",
            "njobs": 60,
            "nodes": 8,
            "load": [0.5, 0.9],
            "annotation": "dfrs-synthetic",
        },
        "x": "load",
        "y": "stretch_max",
    },
}
#: Replications: 2, so the figures meet the small-n rule (no bar from n < 3).
REPLICATIONS = 2


def results_dir(engine: str, root: Path) -> Path:
    """A results dir of ``CASES[engine]``: every instance run by the task function and
    committed through the store (the rows a sweep writes; no Ray)."""
    from schedlab.platform.execution.tasks import run_instances
    from schedlab.platform.planning.plan import build_plan
    from schedlab.platform.planning.validate import parse_spec
    from schedlab.platform.storage.manifest import manifest_for
    from schedlab.platform.storage.store import ResultStore
    from schedlab.workloads.registry import workload_kind

    case = CASES[engine]
    spec = parse_spec(
        {
            "name": f"look-{engine}",
            "engine": engine,
            "seed": 3,
            "policies": case["policies"],
            **({"system": case["system"]} if case["system"] else {}),
            "workload": case["workload"],
            "replications": {"n": REPLICATIONS},
            "outputs": {"dir": str(root / f"look-{engine}")},
            "tracking": {"enabled": False},
        },
        f"look-{engine}.toml",
    )
    plan = build_plan(spec)
    store = ResultStore(spec.results_dir())
    store.prepare(manifest_for(spec, plan), True)
    instances = list(plan.instances(range(REPLICATIONS)))
    kind = workload_kind(instances[0].point.kind)
    shared = kind.load_shared(instances[0].point.params) if kind.load_shared else None
    work = [(inst, list(inst.point.configs)) for inst in instances]
    result = run_instances(plan.engine, work, shared, False, plan.metrics)
    assert not result.failures, result.failures
    store.commit(result.summary, result.jobs, result.failures)
    return spec.results_dir()


#: In the browser: every visible text element's box, the page's width, the legend title,
#: the legend entries and the axis titles (Plotly's own classes).
LOOK_JS = """() => {
  const width = document.documentElement.clientWidth, out = [];
  const texts = document.querySelectorAll('svg text, #page-notes p, #page-notes code, .updatemenu-item-text');
  for (const t of texts) {
    const r = t.getBoundingClientRect();
    if (r.width === 0 || !t.textContent.trim()) continue;
    if (r.left < -1 || r.right > width + 1) out.push([t.textContent.slice(0, 80), r.left, r.right]);
  }
  const q = (sel) => Array.from(document.querySelectorAll(sel)).map((e) => e.textContent);
  const titles = (axis) => Array.from(document.querySelectorAll('.infolayer text'))
    .filter((e) => new RegExp('^' + axis + '[0-9]*title$').test(e.getAttribute('class') || ''))
    .map((e) => e.textContent);
  return {overflow: out, width: width, legendTitle: q('.legendtitletext').join(' '),
          legend: q('.legendtext'), xtitles: titles('x'), ytitles: titles('y')};
}"""

#: An SVG figure opened in the browser: text past the drawing's edge, and every text.
SVG_JS = """() => {
  const svg = document.querySelector('svg'), box = svg.getBoundingClientRect(), out = [];
  for (const t of svg.querySelectorAll('text')) {
    const r = t.getBoundingClientRect();
    if (r.width === 0) continue;
    if (r.left < box.left - 1 || r.right > box.right + 1 || r.top < box.top - 1 || r.bottom > box.bottom + 1)
      out.push(t.textContent.slice(0, 80));
  }
  return {overflow: out, texts: Array.from(svg.querySelectorAll('text')).map((t) => t.textContent)};
}"""

ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def open_page(browser: Any, path: Path, errors: list[str], width: int = 1400) -> Any:
    """``path`` in a new tab, once Plotly has drawn it (an SVG figure: once loaded)."""
    page = browser.new_page(viewport={"width": width, "height": 1000})
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(path.resolve().as_uri(), timeout=300_000)
    if path.suffix == ".html":
        page.wait_for_selector(".plotly-graph-div .main-svg", timeout=300_000)
        page.wait_for_function("document.querySelectorAll('.legendtext').length > 0", timeout=300_000)
    return page
