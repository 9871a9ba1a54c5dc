"""The report page of the stored results (``contactkit report``): one section per stored benchmark or experiment.

Each section shows what was run (the command, from the result's provenance), when and where, the measurement's own
table (where its module has one; the paper's numbers sit in those tables where the module quotes them), the
paper's numbers the module quotes as a constant (``PAPER``) or the result stores under a key naming the paper,
beside ours where the same quantity is in the result, the scalars, the peer rows (every list of records in the
result), the configuration (folded) and the figures. Nothing on the page is typed in: every number is read from
the stored JSON or from the measurement module.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Callable
from pathlib import Path

from contactkit.report.html import MIME, write_page

FOLD_ROWS = 25
"""Scalar tables longer than this are folded (``<details>``) so that the page stays readable."""
CELL_JSON_CHARS = 120
"""A list or dict shown in one cell is cut to this many characters of JSON."""
PLOTS_OPTION = "--plots"
"""The option of a measurement command that names the folder its figures were written to."""
NOT_SCALARS = ("name", "kind", "provenance", "config")


def _cell(v):
    if isinstance(v, (list, dict)):
        text = json.dumps(v)
        return text if len(text) <= CELL_JSON_CHARS else text[:CELL_JSON_CHARS] + "…"
    return v


def flatten(prefix: str, value, out: dict) -> dict:
    """Nested dicts as ``{"a.b.c": leaf}`` into ``out`` (a dict shorter than :data:`CELL_JSON_CHARS` of JSON below
    the top stays one cell; lists of records are left to :func:`record_tables`); returns ``out``."""
    if isinstance(value, dict) and (not prefix or len(json.dumps(value)) > CELL_JSON_CHARS):
        for k, v in value.items():
            flatten(f"{prefix}.{k}" if prefix else str(k), v, out)
    elif not _records(value):
        out[prefix] = _cell(value)
    return out


def _records(value) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(r, dict) for r in value)


def record_tables(data: dict) -> list[tuple[str, list[dict]]]:
    """Every list of records in ``data`` (at any depth of dicts) as ``(dotted key, rows)``, cells flattened."""
    found: list[tuple[str, list[dict]]] = []

    def walk(prefix: str, value) -> None:
        if _records(value):
            found.append((prefix, [{k: _cell(v) for k, v in r.items()} for r in value]))
        elif isinstance(value, dict):
            for k, v in value.items():
                walk(f"{prefix}.{k}" if prefix else str(k), v)

    for key, value in data.items():
        if key not in ("provenance",):
            walk(key, value)
    return found


def _dict(value) -> dict:
    """``value`` if it is a dict, else an empty one (a stored result is shown whatever shape its keys have)."""
    return value if isinstance(value, dict) else {}


def provenance_of(data: dict) -> dict:
    """The result's ``provenance`` dict (empty if missing or not a dict)."""
    return _dict(data.get("provenance"))


def command_line(provenance: dict) -> str:
    """The command that made a result: its ``argv`` as a ``contactkit`` command line when stored, else the stored
    ``command`` text, else ``"?"``."""
    argv = provenance.get("argv")
    if isinstance(argv, list) and argv and all(isinstance(a, str) for a in argv):
        return shlex.join(["contactkit", *argv[1:]])
    return str(provenance.get("command") or "?")


def _where(provenance: dict) -> str:
    git, machine = _dict(provenance.get("git")), _dict(provenance.get("machine"))
    parts = [f"seed {provenance.get('seed')}", f"date {provenance.get('date', '?')}"]
    if git.get("commit"):
        parts.append(f"commit {str(git['commit'])[:10]}{' (dirty tree)' if git.get('dirty') else ''}")
    parts.append(f"{machine.get('cpus', '?')} CPUs, {machine.get('platform', '?')}")
    if isinstance(provenance.get("wall_s"), (int, float)):
        parts.append(f"{provenance['wall_s']:.0f} s wall clock")
    checkpoints = provenance.get("checkpoints")
    for c in checkpoints if isinstance(checkpoints, list) else []:
        if isinstance(c, dict):
            parts.append(f"checkpoint {c.get('path')} (sha256 {str(c.get('sha256'))[:12]}…)")
    return " · ".join(parts)


def figure_paths(data: dict, root: Path) -> tuple[list[Path], list[str]]:
    """The figures a result names (``plots`` or ``figures``), resolved against the source checkout ``root`` and
    the ``--plots`` folder of its command; returns ``(found, missing)``."""
    names = [n for key in ("plots", "figures") if isinstance(data.get(key), list) for n in data[key]
             if isinstance(n, str)]
    try:
        argv = shlex.split(command_line(provenance_of(data))) if names else []
    except ValueError:  # a stored command that is no shell line (unbalanced quotes): no --plots folder from it
        argv = []
    folders = [root] + [root / argv[i + 1] for i, a in enumerate(argv[:-1]) if a == PLOTS_OPTION]
    found, missing = [], []
    for name in names:
        hit = next((f / name for f in folders if (f / name).is_file()), None)
        if hit is not None and hit.suffix.lower() in MIME:
            found.append(hit.resolve())
        else:
            missing.append(name)
    return found, missing


RECORD_KEY = re.compile(r"^(?P<name>[^\[\]]+)\[(?P<where>[^\[\]]+)\]$")
"""A key ``NAME[field=value,...]``: the record of the list ``NAME`` whose fields have those values (as text)."""


def lookup(data, path: tuple[str, ...]):
    """The value at ``path`` (keys, outermost first) in ``data``, or None where there is none.

    A key ``NAME[field=value,...]`` (:data:`RECORD_KEY`) picks the first record of the list ``data[NAME]`` whose
    fields equal the values given (compared as text).
    """
    for key in path:
        match = RECORD_KEY.match(key)
        if isinstance(data, dict) and key in data:
            data = data[key]
        elif match and isinstance(data, dict) and _records(data.get(match["name"])):
            where = dict(pair.split("=", 1) for pair in match["where"].split(",") if "=" in pair)
            data = next((r for r in data[match["name"]]
                         if all(str(r.get(k)) == v for k, v in where.items())), None)
        else:
            return None
    return data


def paper_quotes(paper, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], object]]:
    """Every leaf of a ``PAPER`` constant (nested dicts) as ``(path, leaf)``, in order."""
    if not isinstance(paper, dict):
        return [(path, paper)] if path else []
    return [q for k, v in paper.items() for q in paper_quotes(v, (*path, str(k)))]


def _quoted_row(path: tuple[str, ...], leaf, data: dict) -> dict:
    """One row of the paper's numbers: a :class:`contactkit.eval.paper_quotes.Quote` (in our units, with its
    source) or a plain number, beside our value at the same key."""
    value = getattr(leaf, "ours_units", leaf)
    ours = lookup(data, path)
    row = {"quantity": ".".join(path), "paper": _cell(value), "ours": _cell(ours) if ours is not None else None}
    if hasattr(leaf, "source"):
        row["source"] = leaf.source
    return row


def paper_rows(data: dict, paper: dict | None) -> list[dict]:
    """The paper's numbers, each beside the value of the same quantity in the result where it has one.

    The paper's numbers are the measurement module's ``PAPER`` constant (nested dicts that mirror the result's keys,
    leaves :class:`contactkit.eval.paper_quotes.Quote` or numbers; see :func:`lookup`) and every key of the result
    that names the paper: a dict under it holds the paper's values of the result's quantities of the same (dotted)
    names; a number under ``paper_Q`` (or ``Q_paper``) is the paper's value of ``Q``.
    """
    rows = [_quoted_row(path, leaf, data) for path, leaf in paper_quotes(paper)]
    quoted: dict = {}
    for key, value in data.items():
        if "paper" not in key.lower():
            continue
        if isinstance(value, dict):
            flatten("", value, quoted)
        else:
            quoted[key.replace("paper_", "").replace("_paper", "")] = _cell(value)
    ours = flatten("", {k: v for k, v in data.items() if k not in NOT_SCALARS and "paper" not in k.lower()}, {})
    return rows + [{"quantity": k, "paper": v, "ours": ours.get(k)} for k, v in quoted.items()]


def result_section(data: dict, root: Path, own_table: str | None = None, paper: dict | None = None) -> dict:
    """One section of the report (see :func:`contactkit.report.html.render_page`) for the stored result ``data``.

    Args:
        data: a stored result (``name``, ``kind``, ``provenance`` and the measurement's keys).
        root: the source checkout, which figure paths start from.
        own_table: the measurement's own markdown table of ``data``, if its module has one.
        paper: the paper's numbers quoted by the measurement's module (``PAPER``), if any.
    """
    prov = provenance_of(data)
    scalars = flatten("", {k: v for k, v in data.items() if k not in NOT_SCALARS}, {})
    rows = [{"quantity": k, "value": v} for k, v in scalars.items()]
    found, missing = figure_paths(data, root)
    records = record_tables({k: v for k, v in data.items() if k != "config"})
    config = [{"setting": k, "value": v} for k, v in flatten("config", data.get("config"), {}).items()]
    quotes = paper_rows(data, paper)
    section = {
        "title": f"{data.get('kind', 'result')} {data.get('name', '?')}",
        "anchor": f"{data.get('kind', 'result')}-{data.get('name', '?')}",
        "text": "Command:",
        "code": command_line(prov),
        "notes": _where(prov) + (f" · figures named but not found: {', '.join(missing)}" if missing else ""),
        "markdown": own_table or "",
        "tables": [("the paper's numbers beside ours", quotes)] if quotes else [],
        "details": [],
        "figures": [str(p) for p in found],
    }
    scalar_block = ("quantities", rows)
    if len(rows) > FOLD_ROWS:
        section["details"].append(scalar_block)
    else:
        section["tables"].append(scalar_block)
    peers = [(f"rows: {key}", table) for key, table in records]
    section["details" if own_table else "tables"].extend(peers)
    if config and any(r["setting"] != "config" for r in config):
        section["details"].append(("configuration", config))
    return section


def write_results_report(results: list[dict], out: str | Path, root: str | Path,
                         own_table: Callable[[dict], str | None] = lambda d: None,
                         paper: Callable[[dict], dict | None] = lambda d: None,
                         extra: list[dict] = ()) -> Path:
    """Write the self-contained report page of ``results`` (figures embedded) to ``out``.

    Args:
        results: stored results (as read from ``docs/results/*.json``), in the order shown.
        out: the page to write (parent folders created).
        root: the source checkout, which the results' figure paths start from.
        own_table: the measurement's own markdown table of a result, or None.
        paper: the paper's numbers the measurement's module quotes, or None.
        extra: further sections (e.g. the demo's) appended after the results.

    Returns:
        The page written.
    """
    root = Path(root)
    index = [{"result": f"{d.get('kind', 'result')} {d.get('name', '?')}",
              "date": provenance_of(d).get("date"), "command": command_line(provenance_of(d))} for d in results]
    sections = [{"title": "Stored results", "rows": index,
                 "text": f"{len(results)} stored benchmark and experiment result(s); every number below is read "
                 "from the stored JSON or from the measurement's module, and the command that made it is shown."}]
    sections += [result_section(d, root, own_table(d), paper(d)) for d in results]
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    return write_page(out, "contactkit results", sections + list(extra))
