"""A static HTML page that a person opens in a browser: sections of text, commands, tables and figures.

One code path makes every page contactkit writes (``contactkit report``'s page of the stored results and
``make demo``'s page): :func:`render_page`. Figures are embedded as ``data:`` URIs, so the page is one file that can
be mailed or moved; tables wrap their cells inside the page's width instead of widening it.
"""

from __future__ import annotations

import base64
import html
import re
from pathlib import Path

from contactkit.errors import InvalidInputError
from contactkit.files import write_atomic

MISSING = "—"
"""What a table cell shows for a value that is None."""
STYLE = (
    "body{font-family:sans-serif;max-width:1000px;margin:2em auto;padding:0 1em;line-height:1.4}"
    "div.table{max-width:100%;overflow-x:auto}"
    "table{border-collapse:collapse;margin:0.5em 0}"
    "td,th{border:1px solid #ccc;padding:3px 8px;text-align:right;vertical-align:top;max-width:14em;"
    "overflow-wrap:anywhere}"
    "th{background:#f4f4f4;font-weight:600}td:first-child,th:first-child{text-align:left}"
    "p.note{color:#555;font-size:90%}img{max-width:100%;height:auto}"
    "pre{white-space:pre-wrap;overflow-wrap:anywhere;background:#f6f6f6;padding:0.5em;font-size:90%}"
    "code{overflow-wrap:anywhere}figure{margin:1em 0}figcaption{color:#555;font-size:85%}"
    "p,li,summary{overflow-wrap:anywhere}"
)
"""CSS of the page: tables scroll sideways in their own box rather than widen the page (and their cells wrap
anywhere, so in practice they fit), long cells, commands and words wrap, numbers align right and the first column
(the row's label) left."""
MIME = {".png": "image/png", ".gif": "image/gif", ".jpg": "image/jpeg", ".jpeg": "image/jpeg",
        ".svg": "image/svg+xml", ".webp": "image/webp"}
"""Image types a page embeds, by file suffix."""


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


def _inline(text: str) -> str:
    """Escaped text with markdown's ``code`` and **bold** as HTML."""
    out = html.escape(text)
    out = re.sub(r"`([^`]+)`", r"<code>\1</code>", out)
    return re.sub(r"\*\*([^*]+)\*\*", r"<b>\1</b>", out)


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def markdown_html(text: str) -> str:
    """HTML of the markdown the measurements write (:func:`contactkit.eval.harness.markdown_of`): pipe tables,
    paragraphs separated by blank lines, inline ``code`` and **bold**; any other markup is shown as text, escaped."""
    out, block = [], []

    def flush() -> None:
        if not block:
            return
        if all(line.lstrip().startswith("|") for line in block):
            rows = [_cells(line) for line in block if not re.fullmatch(r"[\s|:\-]+", line)]
            head = "".join(f"<th>{_inline(c)}</th>" for c in rows[0])
            body = "".join("<tr>" + "".join(f"<td>{_inline(c)}</td>" for c in r) + "</tr>" for r in rows[1:])
            out.append(f"<div class='table'><table><tr>{head}</tr>{body}</table></div>")
        else:
            out.append(f"<p>{_inline(' '.join(line.strip() for line in block))}</p>")
        block.clear()

    for line in text.splitlines():
        is_table = line.lstrip().startswith("|")
        if not line.strip() or (block and is_table != block[0].lstrip().startswith("|")):
            flush()
        if line.strip():
            block.append(line)
    flush()
    return "\n".join(out)


def image_source(path: Path, embed: bool, base: Path) -> str:
    """The ``src`` of an ``<img>`` showing ``path``: a ``data:`` URI of its bytes when ``embed``, else the path
    relative to ``base`` (the page's folder).

    Raises:
        InvalidInputError: the figure is missing, unreadable or not an image type of :data:`MIME`.
    """
    mime = MIME.get(path.suffix.lower())
    if mime is None:
        raise InvalidInputError(f"figure '{path}': {path.suffix!r} is not an image type a page shows "
                                f"({', '.join(sorted(MIME))})")
    if not embed:
        return html.escape(path.relative_to(base).as_posix() if path.is_relative_to(base) else path.as_posix())
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InvalidInputError(f"figure '{path}' cannot be read ({exc.strerror or exc})") from None
    return f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"


def _section(s: dict, base: Path, embed: bool) -> list[str]:
    parts = [f"<h2 id='{html.escape(s.get('anchor', ''))}'>{html.escape(s['title'])}</h2>" if s.get("anchor")
             else f"<h2>{html.escape(s['title'])}</h2>"]
    if s.get("text"):
        parts.append(f"<p>{html.escape(s['text'])}</p>")
    if s.get("code"):
        parts.append(f"<pre>{html.escape(s['code'])}</pre>")
    if s.get("notes"):
        parts.append(f"<p class='note'>{html.escape(s['notes'])}</p>")
    parts.append(_table(s.get("rows", [])))
    if s.get("markdown"):
        parts.append(markdown_html(s["markdown"]))
    for caption, rows in s.get("tables", []):
        parts.append(f"<h3>{html.escape(caption)}</h3>{_table(rows)}")
    for caption, rows in s.get("details", []):
        parts.append(f"<details><summary>{html.escape(caption)}</summary>{_table(rows)}</details>")
    for fig in s.get("figures", []):
        path = Path(fig) if Path(fig).is_absolute() else base / fig
        name = html.escape(str(fig))
        parts.append(f"<figure><img src='{image_source(path, embed, base)}' alt='{name}'>"
                     f"<figcaption>{name}</figcaption></figure>")
    for text, href in s.get("links", []):
        parts.append(f"<p><a href='{html.escape(href)}'>{html.escape(text)}</a></p>")
    return parts


def render_page(title: str, sections: list[dict], base: str | Path, footer: str = "", embed: bool = True,
                intro: str = "") -> str:
    """The page's HTML text.

    Args:
        title: page title (also the first heading).
        sections: each a dict with ``title`` and optionally ``anchor`` (the heading's id), ``text`` (a paragraph),
            ``code`` (a command, shown verbatim), ``notes`` (small grey paragraph), ``rows`` (a table: list of dicts,
            keys are the columns), ``markdown`` (see :func:`markdown_html`), ``tables`` / ``details`` (lists of
            ``(caption, rows)``, shown titled / folded), ``figures`` (image paths, relative to ``base`` unless
            absolute) and ``links`` (``(text, href)`` pairs, e.g. to an interactive viewer page).
        base: folder that relative figure paths start from (the page's own folder).
        footer: optional last paragraph in small grey type (e.g. wall-clock times, which vary between runs).
        embed: figures as ``data:`` URIs (one self-contained file) or as relative links.
        intro: optional paragraph under the title.

    Raises:
        InvalidInputError: a figure is missing or not an image (see :func:`image_source`).
    """
    base = Path(base)
    parts = [
        f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>",
        f"<meta name='viewport' content='width=device-width, initial-scale=1'><style>{STYLE}</style></head>",
        f"<body><h1>{html.escape(title)}</h1>",
    ]
    if intro:
        parts.append(f"<p>{html.escape(intro)}</p>")
    for s in sections:
        parts += _section(s, base, embed)
    if footer:
        parts.append(f"<p class='note'>{html.escape(footer)}</p>")
    parts.append("</body></html>")
    return "\n".join(parts)


def write_page(page: str | Path, title: str, sections: list[dict], footer: str = "", embed: bool = True,
               intro: str = "") -> Path:
    """Write :func:`render_page` to ``page`` atomically (figures relative to its folder); returns ``page``."""
    page = Path(page)
    return write_atomic(page, render_page(title, sections, page.parent, footer=footer, embed=embed, intro=intro))


def write_report(out_dir: str | Path, title: str, sections: list[dict], footer: str = "") -> Path:
    """Write ``out_dir/index.html`` (:func:`write_page`, figures embedded).

    Args:
        out_dir: folder holding the figures (paths in sections are relative to it).
        title: page title.
        sections: see :func:`render_page`.
        footer: optional last paragraph in small grey type.

    Returns:
        Path of the page, written atomically.
    """
    return write_page(Path(out_dir) / "index.html", title, sections, footer=footer)
