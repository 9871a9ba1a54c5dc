"""Every measurement module's ``PAPER`` constant: finite, sourced numbers at keys our results have.

Oracles: each quoted number is printed in the paper's text (where ``../shared/papers`` is present); each key
names a value of the stored result (docs/results/NAME.json, where one is stored), except a model the stored run
lists as missing (not run there); a value the run recorded as null (nothing to average: every RL trial of a pushing
case failed) counts when its key is there.
"""

from __future__ import annotations

import importlib
import json
import math
import re
from pathlib import Path

import pytest

from contactkit.eval.harness import BENCHMARKS, EXPERIMENTS
from contactkit.eval.paper_quotes import Quote, paper_values
from contactkit.report.results_page import lookup, paper_quotes, paper_rows

ROOT = Path(__file__).resolve().parents[2]
PAPERS = ROOT.parent / "shared" / "papers"
PAPER_FILES = {"Act-FIGNet paper": "act-fignet_peg-insertion.txt",
               "tight-tolerance paper": "data-driven-sim_tight-tolerance-assembly.txt",
               "LML paper": "lml_connector-insertion.txt",
               "placement paper": "differentiable-contact_stable-placement.txt",
               "pushing paper": "hybrid-contact_residual-rl-pushing.txt"}
REGISTRY = [("benchmark", n, m) for n, m in BENCHMARKS.items()] + [("experiment", n, m) for n, m in EXPERIMENTS.items()]
WITH_PAPER = [(kind, name, importlib.import_module(module).PAPER) for kind, name, module in REGISTRY
              if hasattr(importlib.import_module(module), "PAPER")]


def test_the_measurements_that_reproduce_a_paper_quote_it():
    assert {name for _, name, _ in WITH_PAPER} >= {"prediction-accuracy", "mpc-insertion", "tight-assembly",
                                                   "contact-detection", "connector-insertion", "pushing",
                                                   "replan", "collect"}


def _printed(value: float) -> re.Pattern:
    """The number as a paper may print it: the same digits, trailing zeros allowed, not inside a longer number."""
    text = f"{value:g}"
    tail = r"0*" if "." in text else r"(?:\.0*)?"
    return re.compile(r"(?<![\d.])" + re.escape(text) + tail + r"(?![\d])")


@pytest.mark.parametrize(("kind", "name", "paper"), WITH_PAPER, ids=[n for _, n, _ in WITH_PAPER])
def test_every_quote_is_finite_sourced_and_printed_in_the_paper(kind, name, paper):
    quotes = paper_quotes(paper)
    assert quotes
    for path, quote in quotes:
        assert isinstance(quote, Quote), (name, path)
        assert math.isfinite(quote.value) and math.isfinite(quote.factor) and quote.factor > 0, (name, path)
        short = [p for p in PAPER_FILES if quote.source.startswith(p)]
        assert len(short) == 1, f"{name} {path}: the source must start with a paper's short name: {quote.source}"
        assert re.search(r"Table [IVX]+|Fig\. \d|§[IVX0-9]", quote.source), (name, path, quote.source)
        text_file = PAPERS / PAPER_FILES[short[0]]
        if text_file.is_file():
            assert _printed(quote.value).search(text_file.read_text()), f"{quote.value:g} not in {text_file.name}"


@pytest.mark.parametrize(("kind", "name", "paper"), WITH_PAPER, ids=[n for _, n, _ in WITH_PAPER])
def test_every_key_names_a_value_of_the_stored_result(kind, name, paper):
    stored = ROOT / "docs" / "results" / f"{name}.json"
    if not stored.is_file():
        pytest.skip(f"no stored result of {kind} {name}")
    data = json.loads(stored.read_text())
    not_run = {m.get("model") for m in data.get("missing") or [] if isinstance(m, dict)}
    for path, _ in paper_quotes(paper):
        if path[0] == "models" and path[1] in not_run:
            continue
        value = lookup(data, path)
        if value is None:  # measured as "no value" (e.g. no completed trial): the key must still be in the result
            parent = lookup(data, path[:-1])
            assert isinstance(parent, dict) and path[-1] in parent, (name, ".".join(path), "not in the result")
            continue
        assert isinstance(value, (int, float)) and not isinstance(value, bool), (name, ".".join(path), value)
    rows = paper_rows(data, paper)
    assert len([r for r in rows if "source" in r]) == len(paper_quotes(paper))


def test_quotes_in_the_papers_units_are_scaled_to_ours():
    q = Quote(85, "Act-FIGNet paper §IV-A: 85%", 0.01)
    assert q.ours_units == pytest.approx(0.85)
    assert paper_values({"a": {"b": q}, "c": 2.0}) == {"a": {"b": pytest.approx(0.85)}, "c": 2.0}


def test_pushing_quotes_name_the_keys_of_its_cases():
    """No pushing result is stored: its keys come from the experiment's own case rows."""
    import numpy as np

    from contactkit.control.icr import ProfileKind
    from contactkit.eval import exp_pushing as exp
    from contactkit.pushing.scene import ObjectKind

    done = [{"failure": None, "errors": dict.fromkeys(exp.ERR_KEYS, 1.0)}]
    cases = [exp._case_entry(o, p, np.zeros((1, 3)), np.array([True]), dict.fromkeys(exp.RUNS, done))
             for o in ObjectKind for p in ProfileKind]
    for path, _ in paper_quotes(exp.PAPER):
        assert lookup({"cases": cases}, path) == 1.0, ".".join(path)


def test_lookup_picks_records_and_misses_in_words():
    data = {"rows": [{"model": "a", "policy": "x", "v": 1.0}, {"model": "b", "policy": "x", "v": 2.0}],
            "tasks": {"t": {"w": 3.0}}}
    assert lookup(data, ("rows[model=b,policy=x]", "v")) == 2.0
    assert lookup(data, ("tasks", "t", "w")) == 3.0
    assert lookup(data, ("rows[model=c]", "v")) is None
    assert lookup(data, ("tasks", "u")) is None
    assert lookup(data, ("tasks", "t", "w", "deeper")) is None
