"""Shared by the pipeline tests: running pipelines at smoke scale in one local
Ray session, and one check of a finished run -- no failed simulation, rows
written, each figure a real non-blank 300-dpi PNG with its PDF beside it,
the expected series and checks, and report.md with every figure's sections
in order and one verdict line per check (flagged when the figure rests on
too few replications)."""

from __future__ import annotations

import numpy as np

SECTIONS = ("### Paper says", "### Measured", "### Holds?")
MIN_COLOURS = 10  # a real plot, not a blank canvas


def run_smoke(names, root) -> dict:
    """Run the named pipelines at smoke scale (tracking off) in one local Ray
    session of 2 CPUs, each into ``root / name``."""
    import ray

    from schedlab.pipelines.run import run_pipeline

    if ray.is_initialized():  # e.g. left by a sweep an earlier test ran without a session of its own
        ray.shutdown()
    try:
        ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
        return {name: run_pipeline(name, "smoke", out=root / name, tracking=False) for name in names}
    finally:
        ray.shutdown()


def check_outputs(result, series: list[list[str]] | None) -> None:
    """``series``: the expected plotted series of each figure, in order (None:
    any non-empty list of names per figure)."""
    import matplotlib.image as mpimg

    assert result.failures == 0
    assert all(r.rows_written + r.rows_skipped > 0 for r in result.sweeps)
    for d in result.results_dirs.values():
        assert d.parent == result.out_dir and (d / "manifest.json").exists()
    if series is None:
        series = [f.series for f in result.figures]
        assert result.figures and all(s and all(isinstance(n, str) and n for n in s) for s in series)
    assert len(result.figures) == len(series)
    assert len({f.png for f in result.figures}) == len(result.figures)
    text = result.report_md.read_text()
    assert text.count("\n## ") == len(result.figures)
    checks = [c for f in result.figures for c in f.checks]
    from schedlab.pipelines.base import tally

    assert tally(checks) in text
    from PIL import Image

    from schedlab.pipelines.base import MIN_REPLICATIONS
    from schedlab.plotting import PNG_DPI

    for i, (fig, expected) in enumerate(zip(result.figures, series)):
        assert fig.png.exists() and fig.png.stat().st_size > 0
        assert fig.pdf == fig.png.with_suffix(".pdf") and fig.pdf.read_bytes()[:5] == b"%PDF-"
        with Image.open(fig.png) as im:
            assert tuple(round(d) for d in im.info["dpi"]) == (PNG_DPI, PNG_DPI)
        img = mpimg.imread(fig.png)
        assert img.ndim == 3 and img.shape[0] > 0 and img.shape[1] > 0
        assert np.unique(img.reshape(-1, img.shape[2]), axis=0).shape[0] > MIN_COLOURS
        assert fig.series == expected
        assert fig.checks and all(c.outcome in ("holds", "fails", "inconclusive") for c in fig.checks)
        section = text[text.index(f"## {fig.title}") :]
        if i + 1 < len(result.figures):
            section = section[: section.index(f"## {result.figures[i + 1].title}")]
        parts = [section.index(h) for h in SECTIONS]
        assert parts == sorted(parts)
        assert fig.png.name in section
        assert "±" in section or "Replications per point: " in section or "Instances per" in section
        verdicts = sum(section.count(f"- **{o}**") for o in ("holds", "fails", "inconclusive"))
        assert verdicts == len(fig.checks) and "read from the 95 % intervals shown" in section
        assert fig.pdf.name in section
        # a verdict from too few instances per point carries the caveat, the others do not
        assert fig.replications is not None and fig.replications >= 1
        caveat = f"(n = {fig.replications}: too few replications to rely on)"
        flagged = [c for c in fig.checks if c.n is None]
        assert section.count(caveat) == (len(flagged) if fig.replications < MIN_REPLICATIONS else 0)
