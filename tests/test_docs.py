"""The map in the repo stays true: docs/papers.md and docs/architecture.md name only code that exists, the papers
are named one way everywhere (docs/papers.md), and every Python snippet of the README and docs runs as written."""

from __future__ import annotations

import importlib
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MAPS = ("docs/papers.md", "docs/architecture.md")
DOTTED = re.compile(r"`(contactkit(?:\.\w+)+)`")
OLD_PAPER_NUMBER = re.compile(r"\bpaper [0-9]", re.IGNORECASE)
GENERATED = ("docs/RESULTS.md", "docs/results/")
"""Written by ``contactkit results``, never by hand: their text comes from src/contactkit/eval, which is scanned."""
NAMING_DOC = "docs/papers.md"
"""The one file that may write the retired numbers: it maps them to the names."""


def _resolve(name: str) -> object:
    """The object a dotted name denotes: the longest importable module prefix, then attributes."""
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for attr in parts[cut:]:
            obj = getattr(obj, attr)
        return obj
    raise ModuleNotFoundError(name)


def _dotted_names() -> list[tuple[str, str]]:
    return sorted({(doc, m[1]) for doc in MAPS for m in DOTTED.finditer((ROOT / doc).read_text(encoding="utf-8"))})


def test_maps_name_code():
    assert len(_dotted_names()) > 50, "docs/papers.md lost its equation → function tables"


@pytest.mark.parametrize(("doc", "name"), _dotted_names())
def test_every_named_function_exists(doc: str, name: str):
    try:
        _resolve(name)
    except (ImportError, AttributeError) as err:
        pytest.fail(f"{doc} names `{name}`, which does not exist ({err}); update the table")


def _text_files() -> list[Path]:
    files = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    files += sorted((ROOT / "src" / "contactkit").rglob("*.py")) + sorted((ROOT / "tests").rglob("*.py"))
    return [f for f in files if not str(f.relative_to(ROOT)).startswith(GENERATED)]


def test_papers_are_named_not_numbered():
    hits = [f"{f.relative_to(ROOT)}:{i}" for f in _text_files()
            for i, line in enumerate(f.read_text(encoding="utf-8").splitlines(), 1)
            if OLD_PAPER_NUMBER.search(line) and f != ROOT / NAMING_DOC]
    assert not hits, f"'paper N' is ambiguous; use the names of docs/papers.md at {hits}"


def test_no_reference_to_a_design_file_outside_the_repo():
    missing = "DESIGN" + ".md"
    hits = [str(f.relative_to(ROOT)) for f in _text_files() if missing in f.read_text(encoding="utf-8")]
    assert not hits, f"{hits} cite {missing}, which is not in the repo; cite docs/architecture.md"


SNIPPET = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)
SNIPPET_PAGES = ("README.md", "docs")
RUN_BY_THEIR_OWN_TEST = {
    "docs/robot-logs.md": "tests/data/test_robot_log_docs.py",  # its snippet reads the files the page shows
}
"""Pages whose snippets need files the page writes out: a test of their own runs them (named here; checked)."""
SNIPPET_TIMEOUT_S = 300


def _snippets() -> list:
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    found = []
    for page in pages:
        name = str(page.relative_to(ROOT))
        if name.startswith(GENERATED) or name in RUN_BY_THEIR_OWN_TEST:
            continue
        found += [pytest.param(name, k, m[1], id=f"{name}#{k}")
                  for k, m in enumerate(SNIPPET.finditer(page.read_text(encoding="utf-8")))]
    return found


def test_readme_and_docs_have_snippets():
    assert any(p.values[0] == "README.md" for p in _snippets())


@pytest.mark.parametrize(("page", "index", "code"), _snippets())
def test_every_python_snippet_runs_as_written(page, index, code, tmp_path):
    """In a fresh interpreter, in an empty folder (nothing defined beforehand, nothing left in the repo)."""
    env = {**os.environ, "SB3_LOGDIR": str(tmp_path / "sb3"), "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    run = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=SNIPPET_TIMEOUT_S)
    assert run.returncode == 0, f"{page} snippet {index} failed:\n{run.stderr[-3000:]}"


@pytest.mark.parametrize(("page", "test"), sorted(RUN_BY_THEIR_OWN_TEST.items()))
def test_pages_left_to_their_own_test_are_run_there(page, test):
    assert page.split("/")[-1] in (ROOT / test).read_text(encoding="utf-8"), f"{test} does not run {page}"
