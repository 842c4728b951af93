"""Docs as tests: the code blocks of README.md, the users' guide
(docs/guide/) and the reference pages (docs/*.md: extending, search, gym,
...), and the specs of examples/, run end to end; the links and code paths the documents name exist.

Convention for a document's fenced blocks, taken in order, in a fresh
temporary folder that is the working directory (and on ``sys.path``):

* a block whose first line is ``# file: PATH`` is written to PATH (without
  that line) instead of being run -- a user's file (``twolevel.py``,
  ``mm1.toml``, ``jobs.log``);
* any other ``python`` block is executed; the blocks of one document share
  one namespace, like a notebook read top to bottom;
* every ``toml`` block must parse; a written TOML file with an ``engine`` key
  is a spec: it is validated and run as a sweep (tracking off, results in
  ``results/<name>`` under the temporary folder, where a user's run would
  put them), before the next executed ``python`` block -- which may read its
  results -- or at the end of the document, and must run without a failure;
* every written ``.py`` file must import.

The examples' specs run through ``run_sweep`` too, with checks of real
outcomes (AgedSRPT with alpha = 0 gives SRPTE's rows, DotProduct gives
Tetris's alignment-only rows, conservative backfilling with exact times is
the earliest-fit schedule, code digests in the rows and under code/).

All sweeps share one local Ray session started here, with the examples'
code shipped by ``runtime_env`` ``py_modules`` as ``schedlab run`` would ship
it (the documents' files, unknown up front, reach the workers from the
driver's paths: same host).
"""

from __future__ import annotations

import importlib
import re
import sys
import tomllib
from pathlib import Path

import numpy as np
import polars as pl
import pytest

import schedlab
from schedlab.platform.planning.validate import load_spec, parse_spec
from schedlab.usercode import source_digest
from tests.example_checks import EXAMPLES, ROOT, conservative_reference

FENCE = re.compile(r"^```([A-Za-z0-9_+-]*)[ \t]*\n(.*?)^```[ \t]*$", re.S | re.M)
GUIDE = ROOT / "docs" / "guide"
#: The README, the guide's chapters and the reference pages.
GUIDES = [ROOT / "README.md", *sorted(GUIDE.glob("*.md")), *sorted((ROOT / "docs").glob("*.md"))]
#: Every page whose links, paths, names and commands are checked: those, the example
#: project's README and the reproduction pages (docs/reproductions/).
PAGES = [*GUIDES, ROOT / "examples" / "README.md", *sorted((ROOT / "docs" / "reproductions").rglob("*.md"))]
#: The documents whose code is run: every guide page with a python or toml block but the
#: architecture's (its one TOML block is a pipeline, run by tests/test_pipelines_declare.py).
DOCUMENTS = [
    p
    for p in GUIDES
    if p.name != "architecture.md" and any(m.group(1) in ("python", "toml") for m in FENCE.finditer(p.read_text()))
]
#: Pages about the user's own code: every spec on them must run some code of the page.
USER_CODE_PAGES = {ROOT / "README.md", ROOT / "docs" / "extending.md", GUIDE / "your-own-policy.md"}
FILE_MARK = re.compile(r"#\s*file:\s*(\S+)\s*$")
#: Columns that differ between two policies with equal schedules.
IDENTITY = {"config_id", "policy", "code_sha256", "sim_seconds"}


SCHEDLAB_IMPORT = re.compile(r"^\s*(?:from|import)\s+(schedlab(?:\.\w+)*)", re.M)


def test_extending_examples_import_only_the_public_api():
    """docs/extending.md says to import only schedlab.api: its own examples (every code block) do."""
    text = (ROOT / "docs" / "extending.md").read_text()
    found = [m.group(1) for _, body in FENCE.findall(text) for m in SCHEDLAB_IMPORT.finditer(body)]
    assert found and all(name == "schedlab.api" or name.startswith("schedlab.api.") for name in found), found


@pytest.fixture(scope="module")
def ray_session():
    import ray

    from schedlab.platform.execution import runner

    if ray.is_initialized():  # e.g. left by an earlier module's sweep
        ray.shutdown()
    runner.forget_ray()
    shipped = [str(EXAMPLES / "mypolicies"), str(EXAMPLES / "mygenerators.py"), str(EXAMPLES / "mymetrics.py")]
    ray.init(
        address="local",
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        runtime_env={"py_modules": shipped, "excludes": ["__pycache__", "*.pyc"]},
    )
    try:
        yield
    finally:
        ray.shutdown()


def blocks(path: Path) -> list[tuple[str, str, int]]:
    """(language, text, line of the opening fence) of every fenced block."""
    text = path.read_text()
    return [(m.group(1), m.group(2), text.count("\n", 0, m.start()) + 1) for m in FENCE.finditer(text)]


def run_sweep_here(spec_path: Path, out: Path, **outputs):
    """Run a spec file (validated as `schedlab run` does) with tracking off
    and its results under ``out``; return (report, summary rows)."""
    from schedlab.platform.sweep import run_sweep  # a plain spec to the runner, a [search] spec to its search
    from schedlab.search_figure import convergence  # as `schedlab run` draws it

    data = tomllib.loads(spec_path.read_text())
    data["tracking"] = {"enabled": False}
    data["outputs"] = {**data.get("outputs", {}), "dir": str(out / data["name"]), **outputs}
    report = run_sweep(parse_spec(data, str(spec_path), spec_path.parent), draw=convergence)
    assert report.failures == [], report.failures[:1]
    return report, schedlab.load(report.results_dir).collect()


def forget_modules(folder: Path) -> None:
    """Unload the modules imported from ``folder`` (the next document may
    reuse a name) and drop it from sys.path and from schedlab's finder."""
    from schedlab import usercode

    for name, module in list(sys.modules.items()):
        file = getattr(module, "__file__", None)
        if file and Path(file).resolve().is_relative_to(folder):
            del sys.modules[name]
    while str(folder) in sys.path:
        sys.path.remove(str(folder))
    for top, root in list(usercode._FINDER.roots.items()):
        if Path(root).resolve().is_relative_to(folder):
            del usercode._FINDER.roots[top]
            usercode._LOADED.pop(top, None)


def run_document_spec(spec_path: Path, folder: Path, user_code: bool) -> None:
    """Validate a spec written by a document and run it as a sweep, results
    under ``folder/results/<name>``, as `schedlab run` would put them."""
    spec = load_spec(spec_path)  # `schedlab validate`
    report, rows = run_sweep_here(spec_path, folder / "results")
    if spec.search is not None:  # a search (docs/search.md): its trials, then its selection
        trials = rows.filter(pl.col("replication") < spec.search.replications)
        assert trials.height == report.configs * spec.search.replications > 0
        assert report.selection["winner"]["trial"] in range(spec.search.trials)
        assert rows.height == trials.height + report.selection["simulations"]["selection"]
        return
    reps = spec.replications.n
    assert report.rows_written == report.configs * reps == rows.height > 0
    if user_code:  # every spec on these pages runs some code of the page
        assert rows.filter(pl.col("code_sha256").is_not_null()).height > 0, spec_path.name


@pytest.mark.parametrize("doc", DOCUMENTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_block_of_the_document_runs(doc, tmp_path, monkeypatch, ray_session):
    folder = tmp_path.resolve()
    monkeypatch.chdir(folder)
    sys.path.insert(0, str(folder))
    namespace: dict = {"__name__": f"docs_{doc.stem}"}
    written: list[Path] = []
    pending: list[Path] = []  # specs written and not yet run
    executed = 0

    def run_pending() -> None:
        while pending:
            run_document_spec(pending.pop(0), folder, doc in USER_CODE_PAGES)

    try:
        for lang, text, line in blocks(doc):
            first, _, rest = text.partition("\n")
            mark = FILE_MARK.fullmatch(first.strip())
            if mark:
                target = folder / mark.group(1)
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(rest)
                written.append(target)
                if lang == "toml" and "engine" in tomllib.loads(rest):
                    pending.append(target)
            elif lang == "python":
                run_pending()  # the block may read the results of the specs above it
                exec(compile(text, f"{doc.name}:{line}", "exec"), namespace)
                executed += 1
            elif lang == "toml":
                tomllib.loads(text)  # a fragment, but valid TOML
        for path in written:
            if path.suffix == ".py":
                importlib.import_module(".".join(path.relative_to(folder).with_suffix("").parts))
        run_pending()
    finally:
        forget_modules(folder)
    assert written or executed


def test_the_documents_show_what_they_must():
    """One worked policy per engine in extending.md, run as a test; the
    README's tour has a policy of the reader's own, run in a spec of its own."""
    text = (ROOT / "docs" / "extending.md").read_text()
    for engine in ("queue", "packing", "batch", "dfrs"):
        assert re.search(rf"^from schedlab\.api import (\w+, )*{engine}$", text, re.M), engine
        assert f'get_engine("{engine}")' in text, engine
    readme = blocks(ROOT / "README.md")
    files = [FILE_MARK.fullmatch(t.partition("\n")[0].strip()) for _, t, _ in readme]
    assert any(m and m.group(1).endswith(".py") for m in files)
    assert any(m and m.group(1).endswith(".toml") for m in files)


#: The README's set-up commands, exactly: CI (.ci/run) runs the second one verbatim.
SETUP = "pip install -e . && schedlab run sweeps/psbs-shape.toml\npip install -e '.[test]' && python -m pytest -q\n"


def test_the_readme_starts_with_the_two_setup_commands_ci_runs():
    lang, text, _ = blocks(ROOT / "README.md")[0]
    assert (lang, text) == ("", SETUP)
    ci = [line for line in (ROOT / ".ci" / "run").read_text().splitlines() if line and not line.startswith("#")]
    assert ci[-1] == SETUP.splitlines()[1]


def test_every_guide_chapter_is_in_the_index_and_the_readme():
    index = (GUIDE / "index.md").read_text()
    readme = (ROOT / "README.md").read_text()
    for chapter in sorted(GUIDE.glob("*.md")):
        if chapter.name != "index.md":
            assert f"]({chapter.name})" in index, chapter.name
            assert f"](docs/guide/{chapter.name})" in readme, chapter.name


LINK = re.compile(r"\]\(([^)\s]+)\)")


def anchors(path: Path) -> set[str]:
    """GitHub's ids of a page's headings: lower case, punctuation dropped, spaces to hyphens."""
    text = FENCE.sub("", path.read_text())
    heads = re.findall(r"^#+\s+(.*?)\s*$", text, re.M)
    return {re.sub(r"[^\w\- ]", "", h.lower()).replace(" ", "-") for h in heads}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_link_of_the_page_resolves(page):
    """A relative link names a file or folder of the repository, and its
    #anchor a heading of that page."""
    for target in LINK.findall(FENCE.sub("", page.read_text())):
        if "://" in target or target.startswith("mailto:"):
            continue
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        assert dest.exists(), f"{page.relative_to(ROOT)}: {target}"
        if anchor and dest.suffix == ".md":
            assert anchor in anchors(dest), f"{page.relative_to(ROOT)}: {target}"


#: First components of a path a document may name, and the folder it is relative to:
#: repository folders from the root; schedlab's packages from schedlab/ (docs/architecture.md's short form).
#: (Named, not listed from the disk: a results/ or .venv/ left in the checkout is not the repository's.)
TOP = {d: ROOT for d in ("schedlab", "tests", "benchmarks", "sweeps", "examples", "infra", "docs", ".ci")}
TOP.update({d.name: ROOT / "schedlab" for d in (ROOT / "schedlab").iterdir() if (d / "__init__.py").exists()})
CODE_SPAN = re.compile(r"`([^`\n]+)`")
PATHLIKE = re.compile(r"^[\w.-]+(/[\w.-]+)+/?$")
GYM_ID = re.compile(r"^schedlab/[A-Z]\w*-v\d+$")  # a Gymnasium environment id (schedlab/Batch-v0), not a path


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_code_path_the_page_names_exists(page):
    """`schedlab/engines/queue/sim/engine.py`, `platform/tracking/`, `benchmarks/x.py`,
    `sweeps/x.toml` in a page's text (not its code blocks) name what is there:
    a file move leaves no page behind. A `use` reference's `:Name` is cut off;
    spans with placeholders (<name>, *, {a,b}) are not paths."""
    missing = []
    for span in CODE_SPAN.findall(FENCE.sub("", page.read_text())):
        for token in span.split():
            token = token.split(":")[0].rstrip(".,;)")
            if not PATHLIKE.match(token) or token.split("/")[0] not in TOP or GYM_ID.match(token):
                continue
            if not (TOP[token.split("/")[0]] / token).exists():
                missing.append(token)
    assert not missing, f"{page.relative_to(ROOT)} names paths that do not exist: {missing}"


#: Dotted names in the documents that are not Python: MLflow tags schedlab writes.
NOT_MODULES = {
    "schedlab.rows",
    "schedlab.rows_digest",
    "schedlab.identical",
    "schedlab.dominated",
    "schedlab.search.trial",
}
DOTTED = re.compile(r"(?<![\w/.-])schedlab(?:\.\w+)+")


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_dotted_name_the_page_names_exists(page):
    """`schedlab.platform.statistics.compare`, `schedlab.engines.dfrs.sim` ... name a
    module, or an attribute of one, as the code is laid out now."""
    missing = []
    for name in sorted(set(DOTTED.findall(page.read_text())) - NOT_MODULES):
        parts = name.split(".")
        for i in range(len(parts), 0, -1):
            try:
                obj = importlib.import_module(".".join(parts[:i]))
                break
            except ModuleNotFoundError:
                continue
        for attr in parts[i:]:
            obj = getattr(obj, attr, None)
        if obj is None:
            missing.append(name)
    assert not missing, f"{page.relative_to(ROOT)} names what does not exist: {missing}"


def test_the_architecture_lists_every_module():
    """docs/architecture.md's module listing names every module and package of
    schedlab (a pipeline's own module is covered by its TOML's line): a module
    added or moved without its line fails here."""
    section = (ROOT / "docs" / "architecture.md").read_text().split("## The modules", 1)[1]
    listing = FENCE.search(section).group(2)
    package = ROOT / "schedlab"
    missing = []
    for path in sorted(package.rglob("*.py")):
        if path.stem in ("__init__", "__main__") or path.with_suffix(".toml").exists():
            continue
        if not re.search(rf"(?<![\w-]){re.escape(path.stem)}(\.py)?(?![\w-])", listing):
            missing.append(str(path.relative_to(ROOT)))
    for init in sorted(package.rglob("__init__.py")):
        if init.parent != package and f"{init.parent.name}/" not in listing:
            missing.append(f"{init.parent.relative_to(ROOT)}/")
    assert not missing, f"add a line to docs/architecture.md's module listing for: {missing}"


SHELL = ("", "bash", "sh", "console", "shell")


def command_lines(page: Path) -> list[str]:
    """The `schedlab ...` command lines of a page: in its shell blocks and in its text's code spans."""
    text = page.read_text()
    lines = [
        line
        for m in FENCE.finditer(text)
        if m.group(1) in SHELL
        for line in m.group(2).splitlines()
        if line.startswith("schedlab ")
    ]
    return lines + [span for span in CODE_SPAN.findall(FENCE.sub("", text)) if span.startswith("schedlab ")]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_command_the_page_shows_exists(page):
    """Each `schedlab ...` line names a real command and only options it has
    (`[--by shape]`, `--logx/--logy`, `--param=x` read as the options they
    name; values and arguments are not checked)."""
    import click

    from schedlab.cli import main

    wrong = []
    for line in command_lines(page):
        words = re.split(r"\s#", line)[0].replace("[", " ").replace("]", " ").split()
        command, i = main, 1
        while isinstance(command, click.Group) and i < len(words) and not words[i].startswith("-"):
            command = command.commands.get(words[i])
            if command is None:
                wrong.append(f"{line}: no command {words[i]!r}")
                break
            i += 1
        if command is None:
            continue
        options = {"--help", "-h"}
        for param in command.params:
            options.update(param.opts, param.secondary_opts)
        for word in words[i:]:
            if word.startswith("--"):
                wrong += [f"{line}: no option {o}" for o in word.split("=")[0].split("/") if o not in options]
    assert not wrong, f"{page.relative_to(ROOT)}: {wrong}"


# ---- the examples' specs, end to end -------------------------------------------------------------

EXAMPLE_SPECS = sorted(EXAMPLES.glob("*.toml"))


def test_there_is_an_example_spec_per_engine():
    engines = {tomllib.loads(p.read_text())["engine"] for p in EXAMPLE_SPECS}
    assert engines == {"queue", "packing", "batch", "dfrs"}


def same_rows(rows: pl.DataFrame, a: pl.Expr, b: pl.Expr, ignore=()) -> None:
    """The rows selected by a and b are equal in every column but IDENTITY
    and ``ignore`` (float columns bit for bit)."""
    keep = [c for c in rows.columns if c not in IDENTITY and c not in ignore]
    left = rows.filter(a).select(keep).sort(keep)
    right = rows.filter(b).select(keep).sort(keep)
    assert left.height > 0 and left.equals(right)


def check_provenance(rows: pl.DataFrame, results_dir: str, user_policy: str) -> None:
    package = EXAMPLES / "mypolicies"
    digest = source_digest(package)
    assert set(rows.filter(pl.col("policy") == user_policy)["code_sha256"]) == {digest}
    assert (
        rows.filter(pl.col("policy") != user_policy)["code_sha256"].null_count()
        == rows.filter(pl.col("policy") != user_policy).height
    )
    assert set(rows["workload_code_sha256"]) == {source_digest(EXAMPLES / "mygenerators.py")}
    assert rows["schedlab_digest"].n_unique() == 1
    kept = Path(results_dir) / "code" / digest / "mypolicies"
    for module in package.glob("*.py"):
        assert (kept / module.name).read_bytes() == module.read_bytes()


@pytest.mark.parametrize("spec_path", EXAMPLE_SPECS, ids=lambda p: p.stem)
def test_example_spec_runs_end_to_end(spec_path, tmp_path, monkeypatch, ray_session):
    monkeypatch.chdir(tmp_path)  # the spec's `use` paths must not depend on the working directory
    spec = load_spec(spec_path)
    report, rows = run_sweep_here(spec_path, tmp_path, per_job=spec_path.stem == "batch")
    assert report.rows_written == report.configs * spec.replications.n == rows.height
    for m in spec.metrics:
        assert rows[m.name].is_finite().all(), m.name
    if spec_path.stem == "aged":
        check_provenance(rows, report.results_dir, "AgedSRPT")
        srpte = pl.col("policy") == "SRPTE"
        same_rows(rows, (pl.col("policy") == "AgedSRPT") & (pl.col("policy_alpha") == 0.0), srpte, ["policy_alpha"])
        assert (rows["big_job_slowdown"] >= 1.0).all()
        key = ["sigma", "replication"]
        aged = rows.filter(pl.col("policy_alpha") == 0.1).sort(key)["mst"]
        assert not aged.equals(rows.filter(srpte).sort(key)["mst"])  # alpha > 0 does change the schedule
    elif spec_path.stem == "packing":
        check_provenance(rows, report.results_dir, "DotProduct")
        tetris = (pl.col("policy") == "Tetris") & (pl.col("policy_fairness") == 1.0) & (pl.col("policy_epsilon") == 0.0)
        same_rows(rows, pl.col("policy") == "DotProduct", tetris, ["policy_fairness", "policy_epsilon"])
    elif spec_path.stem == "batch":
        check_provenance(rows, report.results_dir, "Conservative")
        jobs = schedlab.load(report.results_dir, "jobs").collect()
        exact = rows.filter((pl.col("policy") == "Conservative") & (pl.col("overestimate") == 1.0))
        assert exact.height == spec.replications.n
        for cid, rep in exact.select("config_id", "replication").iter_rows():
            run = jobs.filter((pl.col("config_id") == cid) & (pl.col("replication") == rep)).sort("job_id")
            assert run.height == 500 and run["requested_time"].equals(run["runtime"])
            expected = conservative_reference(
                run["submit"].to_numpy(), run["runtime"].to_numpy(), run["procs"].to_numpy(), 64
            )
            assert np.array_equal(run["start"].to_numpy(), expected)
    elif spec_path.stem == "dfrs":
        check_provenance(rows, report.results_dir, "MemPack*")
        assert (rows["n_jobs"] == 200).all() and (rows["stretch_mean"] >= 1.0).all()
        assert rows.filter(pl.col("policy") == "MemPack*")["migrations"].sum() == 0
    else:
        pytest.fail(f"no outcome checks for examples/{spec_path.name}: add them here")


def test_spec_module_docstring_example_is_a_valid_spec():
    """The annotated spec in ``schedlab.platform.planning.spec``'s docstring parses
    and plans as written (its grid: 3 zipped points x 3 policies)."""
    import textwrap
    import tomllib

    from schedlab.platform.planning import spec as spec_module
    from schedlab.platform.planning.plan import build_plan

    doc = spec_module.__doc__
    body = doc.split("::\n", 1)[1]
    data = tomllib.loads(textwrap.dedent(body))
    spec = parse_spec(data, source="spec docstring")
    plan = build_plan(spec, source="spec docstring")
    assert spec.name == "psbs-shape" and spec.engine == "queue"
    assert len(plan.configs) == 9
    assert {c.policy for c in plan.configs.values()} == {"PS", "SRPT", "PSBS"}
