"""A static HTML page that a person opens in a browser: sections of text, tables and figures."""

from __future__ import annotations

import html
from pathlib import Path

from contactkit.files import write_atomic

MISSING = "—"
"""What a table cell shows for a value that is None."""
STYLE = (
    "body{font-family:sans-serif;max-width:1000px;margin:2em auto;padding:0 1em;line-height:1.4}"
    "div.table{max-width:100%;overflow-x:auto}"
    "table{border-collapse:collapse;margin:0.5em 0}"
    "td,th{border:1px solid #ccc;padding:3px 8px;text-align:right;vertical-align:top;max-width:14em;"
    "overflow-wrap:anywhere;word-wrap:break-word}"
    "th{background:#f4f4f4;font-weight:600}td:first-child,th:first-child{text-align:left}"
    "p.note{color:#555;font-size:90%}img{max-width:100%}"
)
"""CSS of the page: tables scroll sideways in their own box instead of widening the page, long cells wrap, numbers
align right and the first column (the row's label) left."""


def _table(rows: list[dict]) -> str:
    if not rows:
        return ""
    keys = list(dict.fromkeys(k for r in rows for k in r))
    head = "".join(f"<th>{html.escape(str(k))}</th>" for k in keys)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(_fmt(r.get(k, '')))}</td>" for k in keys) + "</tr>" for r in rows
    )
    return f"<div class='table'><table><tr>{head}</tr>{body}</table></div>"


def _fmt(v) -> str:
    if v is None:
        return MISSING
    return f"{v:.4g}" if isinstance(v, float) else str(v)


def write_report(out_dir: str | Path, title: str, sections: list[dict], footer: str = "") -> Path:
    """Write ``out_dir/index.html``.

    Args:
        out_dir: folder holding the figures (paths in sections are relative to it).
        title: page title.
        sections: each ``{"title": str, "text": str, "rows": list[dict], "figures": [relative paths]}``
            (all keys but ``title`` optional).
        footer: optional last paragraph in small grey type (e.g. wall-clock times, which vary between runs).

    Returns:
        Path of the page, written atomically.
    """
    out_dir = Path(out_dir)
    parts = [
        f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>",
        f"<meta name='viewport' content='width=device-width, initial-scale=1'><style>{STYLE}</style></head>",
        f"<body><h1>{html.escape(title)}</h1>",
    ]
    for s in sections:
        parts.append(f"<h2>{html.escape(s['title'])}</h2>")
        if s.get("text"):
            parts.append(f"<p>{html.escape(s['text'])}</p>")
        parts.append(_table(s.get("rows", [])))
        for fig in s.get("figures", []):
            parts.append(f"<p><img src='{html.escape(str(fig))}' alt='{html.escape(str(fig))}'></p>")
    if footer:
        parts.append(f"<p class='note'>{html.escape(footer)}</p>")
    parts.append("</body></html>")
    page = out_dir / "index.html"
    return write_atomic(page, "\n".join(parts))
