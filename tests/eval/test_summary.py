"""The default summary of a result: every shown value is the result's own (formatted), records become tables,
long series stay in the JSON, and the summary stays short for every stored result."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from contactkit.eval.summary import MAX_COLUMNS, MAX_ROWS, MAX_TABLES, SHORT_LIST, format_value, summarise

RESULTS = Path(__file__).resolve().parents[2] / "docs" / "results"


def _lookup(result: dict, dotted: str):
    """The value at a dotted path (list items by position); None when the path is ambiguous or absent."""
    node = result
    for key in dotted.split("."):
        if isinstance(node, list):
            node = node[int(key)]
        elif isinstance(node, dict) and key in node:
            node = node[key]
        else:
            return None
    return node


def test_models_become_a_table_and_series_stay_in_the_json():
    result = {
        "name": "x", "kind": "experiment", "provenance": {"seed": 0}, "config": {"episodes": 5},
        "success_rate": 0.5, "quick": True, "shape": [1, 2, 3],
        "models": {"engine": {"success": 0.8, "replan_s": 0.125}, "mujoco": {"success": 0.9, "replan_s": 0.25}},
        "series": {"engine": list(range(SHORT_LIST + 1))},
        "rows": [{"model": "a", "rmse": 1.0}, {"model": "b", "rmse": 2.0}],
    }
    summary = summarise(result)
    singles, *tables = summary.tables
    assert singles.title == "" and singles.columns == ("value",)
    assert dict(singles.rows) == {"success_rate": ("0.5",), "quick": ("True",), "shape": ("1, 2, 3",)}
    by_title = {t.title: t for t in tables}
    assert by_title["models"].columns == ("success", "replan_s") and not by_title["models"].transposed
    assert by_title["models"].rows == (("engine", ("0.8", "0.125")), ("mujoco", ("0.9", "0.25")))
    assert by_title["rows"].rows == (("0", ("a", "1")), ("1", ("b", "2")))
    assert summary.json_only == ("series.engine",)


def test_fewer_records_than_fields_read_down_the_page_and_top_level_quantities_come_first():
    result = {"deep": {"a": {"x": 1.0}}, "models": {"m1": {"p": 1, "q": 2, "r": 3}, "m2": {"p": 4, "q": 5, "r": 6}},
              "top": 2}
    singles, models = summarise(result).tables
    assert [label for label, _ in singles.rows] == ["top", "deep.a.x"]
    assert models.transposed and models.columns == ("m1", "m2")
    assert models.rows == (("p", ("1", "4")), ("q", ("2", "5")), ("r", ("3", "6")))


@pytest.mark.parametrize("path", sorted(RESULTS.glob("*.json")), ids=lambda p: p.stem)
def test_every_stored_result_summarises_shortly_and_truly(path):
    result = json.loads(path.read_text())
    summary = summarise(result)
    assert 1 <= len(summary.tables) <= MAX_TABLES
    for table in summary.tables:
        assert len(table.rows) <= MAX_ROWS and len(table.columns) <= MAX_COLUMNS
        for label, cells in table.rows:
            for column, text in zip(table.columns, cells, strict=True):
                if text == "":
                    continue
                key, field = (column, label) if table.transposed else (label, column)
                parts = (label,) if table.columns == ("value",) else (table.title, key, field)
                dotted = ".".join(p for p in parts if p)
                value = _lookup(result, dotted)
                assert value is not None or text == "None", (path.name, dotted)
                assert format_value(value) == text, (path.name, dotted)
