"""The HTML report: escaped text, tables that wrap instead of widening the page, the footer."""

from html.parser import HTMLParser

from contactkit.report.html import MISSING, STYLE, write_report


class _Cells(HTMLParser):
    """Collects the text of every th/td and the classes of every div."""

    def __init__(self):
        super().__init__()
        self.cells, self.divs, self._in_cell = [], [], False

    def handle_starttag(self, tag, attrs):
        if tag in ("th", "td"):
            self._in_cell = True
            self.cells.append("")
        if tag == "div":
            self.divs.append(dict(attrs).get("class"))

    def handle_endtag(self, tag):
        if tag in ("th", "td"):
            self._in_cell = False

    def handle_data(self, data):
        if self._in_cell:
            self.cells[-1] += data


def _page(tmp_path, rows, footer=""):
    page = write_report(tmp_path, "t <&>", [{"title": "s", "text": "a < b", "rows": rows}], footer=footer)
    return page.read_text(encoding="utf-8")


def test_table_cells_hold_every_key_and_value_escaped(tmp_path):
    rows = [{"model": "<m>", "err [mm]": 1.23456789, "note": None}, {"model": "b", "extra": 2}]
    parser = _Cells()
    parser.feed(_page(tmp_path, rows))
    head = ["model", "err [mm]", "note", "extra"]
    assert parser.cells == [*head, "<m>", "1.235", MISSING, "", "b", "", "", "2"]


def test_tables_sit_in_a_scrolling_box_and_cells_wrap(tmp_path):
    text = _page(tmp_path, [{"a_very_long_column_name_without_spaces_at_all": "x" * 200}])
    parser = _Cells()
    parser.feed(text)
    assert parser.divs == ["table"]
    assert "div.table{max-width:100%;overflow-x:auto}" in STYLE
    assert "overflow-wrap:anywhere" in STYLE and "max-width:14em" in STYLE
    assert STYLE in text


def test_text_title_and_footer_are_escaped(tmp_path):
    text = _page(tmp_path, [], footer="times < 1 s & more")
    assert "<title>t &lt;&amp;&gt;</title>" in text
    assert "<p>a &lt; b</p>" in text
    assert "<p class='note'>times &lt; 1 s &amp; more</p>" in text
    assert "<table" not in text


def test_no_footer_paragraph_without_a_footer(tmp_path):
    assert "class='note'" not in _page(tmp_path, [{"a": 1}])
