"""The report page of stored results: what was run, the paper's numbers beside ours, the peer rows, the figures
(embedded), and a page that fits its window in a real browser with every image loaded."""

from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from contactkit.report.html import markdown_html, write_page  # noqa: E402
from contactkit.report.results_page import (  # noqa: E402
    command_line,
    figure_paths,
    paper_rows,
    result_section,
    write_results_report,
)

WIDE_COLUMNS = 24
"""Columns of the synthetic peer table: far wider than the page if its cells did not wrap."""


class _Page(HTMLParser):
    """The img sources, the text of pre blocks and of every cell."""

    def __init__(self):
        super().__init__()
        self.images, self.pre, self.cells, self._in = [], [], [], None

    def handle_starttag(self, tag, attrs):
        if tag == "img":
            self.images.append(dict(attrs)["src"])
        if tag in ("pre", "td", "th"):
            self._in = tag
            (self.pre if tag == "pre" else self.cells).append("")

    def handle_endtag(self, tag):
        self._in = None

    def handle_data(self, data):
        if self._in == "pre":
            self.pre[-1] += data
        elif self._in in ("td", "th"):
            self.cells[-1] += data


def _figure(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig, ax = plt.subplots(figsize=(3, 2))
    ax.plot([0, 1], [0, 1])
    fig.savefig(path)
    plt.close(fig)
    return path


def _result_keys() -> dict:
    return {"name": "toy", "kind": "experiment", "force_rmse_N": 1.5, "paper_force_rmse_N": 1.37}


def _result(root: Path) -> dict:
    _figure(root / "figs" / "curve.png")
    wide = [{f"a_long_column_name_{i}": f"value_without_any_spaces_{i}_{'x' * 30}" for i in range(WIDE_COLUMNS)}]
    return {
        **_result_keys(),
        "peers": [{"method": "ours", "err": 1.0}, {"method": "peer", "err": 2.5}], "wide": wide,
        "plots": ["curve.png", "gone.png"],
        "provenance": {"argv": ["/venv/bin/contactkit", "experiment", "toy", "--plots", "figs"], "seed": 3,
                       "date": "2026-01-01T00:00:00Z", "machine": {"cpus": 2}},
    }


def test_command_comes_from_argv_else_from_the_stored_text():
    assert command_line({"argv": ["/x/bin/contactkit", "benchmark", "lml", "--json", "a b.json"]}) == \
        "contactkit benchmark lml --json 'a b.json'"
    assert command_line({"command": "contactkit benchmark collect"}) == "contactkit benchmark collect"
    assert command_line({}) == "?"


def test_figures_resolve_in_the_plots_folder_and_missing_ones_are_named(tmp_path):
    data = _result(tmp_path)
    found, missing = figure_paths(data, tmp_path)
    assert found == [(tmp_path / "figs" / "curve.png").resolve()]
    assert missing == ["gone.png"]


def test_paper_numbers_sit_beside_ours_for_the_same_quantity():
    data = {"name": "t", "ours_force_rmse_N": 2.0, "ms_per_step": 4.0}
    rows = paper_rows(data, {"ours_force_rmse_N": 1.37, "other": 5.0})
    assert {"quantity": "ours_force_rmse_N", "paper": 1.37, "ours": 2.0} in rows
    assert {"quantity": "other", "paper": 5.0, "ours": None} in rows
    assert paper_rows(data, None) == []
    stored = paper_rows({"paper": {"x": 1.0}, "x": 0.5}, None)
    assert stored == [{"quantity": "x", "paper": 1.0, "ours": 0.5}]
    assert paper_rows(_result_keys(), None) == [{"quantity": "force_rmse_N", "paper": 1.37, "ours": 1.5}]


def test_section_shows_command_tables_and_embedded_figures(tmp_path):
    data = _result(tmp_path)
    section = result_section(data, tmp_path, own_table="| a | b |\n|---|---:|\n| `x` | 2 |\n\nA note.")
    page = write_page(tmp_path / "out" / "page.html", "t", [section])
    parsed = _Page()
    parsed.feed(page.read_text(encoding="utf-8"))
    assert parsed.pre == ["contactkit experiment toy --plots figs"]
    assert len(parsed.images) == 1 and parsed.images[0].startswith("data:image/png;base64,")
    assert "gone.png" in section["notes"]
    assert {"a", "b", "x", "2", "force_rmse_N", "1.5", "1.37", "peer", "2.5"} <= set(parsed.cells)


def test_markdown_tables_and_paragraphs():
    text = markdown_html("| h | **k** |\n|---|---:|\n| a < b | `c` |\n\nSome **bold** text\non two lines.")
    assert text == ("<div class='table'><table><tr><th>h</th><th><b>k</b></th></tr>"
                    "<tr><td>a &lt; b</td><td><code>c</code></td></tr></table></div>\n"
                    "<p>Some <b>bold</b> text on two lines.</p>")


def test_synthetic_report_loads_every_image_and_fits_the_window(tmp_path, chromium_check):
    data = _result(tmp_path)
    (tmp_path / "results").mkdir()
    page = write_results_report([data], tmp_path / "out" / "report.html", tmp_path)
    check = chromium_check(page)
    assert [i["ok"] for i in check["images"]] == [True]
    assert check["overflowing"] == [] and check["scrolling_tables"] == 0
    assert check["scroll_width"] <= check["viewport"]


def test_the_check_sees_a_broken_image_and_an_overflow(tmp_path, chromium_check):
    """The browser check can fail: a missing image and a 3000 px wide block are reported."""
    page = tmp_path / "bad.html"
    page.write_text("<!doctype html><html><body><img src='nowhere.png' alt='x'>"
                    "<div style='width:3000px'>wide</div></body></html>")
    check = chromium_check(page)
    assert [i["ok"] for i in check["images"]] == [False]
    assert check["overflowing"] and check["scroll_width"] > check["viewport"]


def test_stored_results_report_renders_in_chromium(tmp_path, chromium_check):
    """``contactkit report`` on the repository's docs/results: every figure embedded and loaded, nothing wider than
    the window."""
    from typer.testing import CliRunner

    from contactkit.cli import app
    from contactkit.eval.store import default_results_dir

    out = tmp_path / "report.html"
    run = CliRunner().invoke(app, ["report", "-o", str(out)])
    assert run.exit_code == 0, run.output
    stored = sorted(default_results_dir().glob("*.json"))
    text = out.read_text(encoding="utf-8")
    for f in stored:
        data = json.loads(f.read_text())
        assert f"{data['kind']} {data['name']}</h2>" in text
    check = chromium_check(out)
    named = sum(len(figure_paths(json.loads(f.read_text()), default_results_dir().parents[1])[0]) for f in stored)
    assert len(check["images"]) == named > 0
    assert all(i["ok"] for i in check["images"]), [i for i in check["images"] if not i["ok"]]
    assert check["overflowing"] == [] and check["scrolling_tables"] == 0


def test_results_of_any_shape_give_a_page(tmp_path):
    """A stored result whose keys are not the expected shapes (hand-edited, older) still gives a section."""
    odd = [{"provenance": ["not", "a", "dict"], "plots": "notalist.png", "figures": [1, None]},
           {"name": "x", "kind": "benchmark", "provenance": {"git": "abc", "machine": 3, "checkpoints": "c",
                                                             "command": "contactkit 'unbalanced"},
            "config": 5, "plots": ["nope.png"]},
           {}]
    page = write_results_report(odd, tmp_path / "r.html", tmp_path)
    text = page.read_text(encoding="utf-8")
    assert text.count("<h2") == 4 and "nope.png" in text


def test_quoted_paper_numbers_carry_their_source_in_our_units_and_pick_records():
    from contactkit.eval.paper_quotes import Quote

    data = {"name": "t", "rows": [{"model": "a", "err": 9.0}, {"model": "m", "err": 2.0}]}
    paper = {"rows[model=m]": {"err": Quote(150, "X paper Table I", 0.01)}, "gone": Quote(1.0, "X paper §2")}
    assert paper_rows(data, paper) == [
        {"quantity": "rows[model=m].err", "paper": 1.5, "ours": 2.0, "source": "X paper Table I"},
        {"quantity": "gone", "paper": 1.0, "ours": None, "source": "X paper §2"}]
    assert result_section(data, Path("."), paper=paper)["tables"][0][0] == "the paper's numbers beside ours"
