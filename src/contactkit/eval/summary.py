"""A short human summary of a measurement's result: what ``contactkit benchmark|experiment`` prints by default
(the full result is the JSON of ``--json``).

Every scalar of the result (numbers, strings, booleans, None, and lists of at most :data:`SHORT_LIST` of them) is a
leaf at a path of keys; a top-level list of objects counts as an object keyed by position (deeper ones, such as
per-episode records, stay in the JSON). Leaves that share all but their last key form a row (labelled by the key
before, its columns the last keys); rows with the same columns under the same keys form a table:
``models.<model>.success_rate`` becomes a table ``models`` with a row per model. The other leaves go to the table
of single quantities. Long lists, and the ``config`` the run was given, stay in the JSON only.
"""

from __future__ import annotations

from dataclasses import dataclass

SKIPPED_KEYS = ("name", "kind", "provenance", "stored", "config", "budget", "setup")
"""Top-level keys a summary leaves out: the identity, provenance and inputs of the run."""
SHORT_LIST = 6
"""A list of at most this many scalars is shown as one value; longer lists stay in the JSON."""
MAX_ROWS = 16
MAX_COLUMNS = 8
MAX_TABLES = 6
"""Size limits of a summary; what they cut is counted in :attr:`SummaryTable.cut` and :attr:`Summary.cut`."""

Path = tuple[str, ...]


@dataclass(frozen=True)
class SummaryTable:
    """One table of a summary.

    Attributes:
        title: the keys above the rows, dotted (``""``: single quantities, columns ``("value",)``).
        columns: the column names.
        rows: ``(label, cells)`` per row, cells as text, ``""`` where a row has no such column.
        cut: rows and columns left out by :data:`MAX_ROWS` / :data:`MAX_COLUMNS`.
        transposed: the rows are the records' keys and the columns the records (a table of fewer records than
            keys reads better down the page).
    """

    title: str
    columns: tuple[str, ...]
    rows: tuple[tuple[str, tuple[str, ...]], ...]
    cut: int = 0
    transposed: bool = False


@dataclass(frozen=True)
class Summary:
    """The tables of a result, the dotted paths of what stays in the JSON only, and the tables cut."""

    tables: tuple[SummaryTable, ...]
    json_only: tuple[str, ...]
    cut: int = 0


def format_value(value) -> str:
    """Text of a leaf: floats with 4 significant digits, short lists comma-separated."""
    if isinstance(value, bool) or value is None:
        return str(value)
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, list):
        return ", ".join(format_value(v) for v in value)
    return str(value)


def _is_scalar(value) -> bool:
    return value is None or isinstance(value, (bool, int, float, str))


def _leaves(path: Path, value, leaves: list[tuple[Path, object]], json_only: list[str]) -> None:
    if isinstance(value, dict):
        for key, child in value.items():
            _leaves((*path, str(key)), child, leaves, json_only)
    elif _is_scalar(value) or (isinstance(value, list) and len(value) <= SHORT_LIST
                                and all(_is_scalar(v) for v in value)):
        leaves.append((path, value))
    elif len(path) == 1 and isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        for index, record in enumerate(value):  # top-level records: a row each, labelled by position
            _leaves((*path, str(index)), record, leaves, json_only)
    else:
        json_only.append(".".join(path))


def _table(title: Path, rows: dict[str, dict[str, str]], transpose: bool = True) -> SummaryTable:
    columns = list(dict.fromkeys(c for cells in rows.values() for c in cells))
    transposed = transpose and len(columns) > len(rows)
    if transposed:
        rows = {c: {label: cells[c] for label, cells in rows.items() if c in cells} for c in columns}
        columns = list(dict.fromkeys(c for cells in rows.values() for c in cells))
    shown_rows, shown_columns = list(rows)[:MAX_ROWS], columns[:MAX_COLUMNS]
    cut = len(rows) - len(shown_rows) + len(columns) - len(shown_columns)
    body = tuple((label, tuple(rows[label].get(c, "") for c in shown_columns)) for label in shown_rows)
    return SummaryTable(".".join(title), tuple(shown_columns), body, cut, transposed)


def _dotted(*parts: str) -> str:
    return ".".join(p for p in parts if p)


def summarise(result: dict) -> Summary:
    """The :class:`Summary` of a measurement's result (a JSON object; the module docstring says how)."""
    leaves: list[tuple[Path, object]] = []
    json_only: list[str] = []
    for key, value in result.items():
        if key not in SKIPPED_KEYS:
            _leaves((str(key),), value, leaves, json_only)
    grouped: dict[Path, dict[str, dict[str, str]]] = {}
    for path, value in leaves:
        title, label, column = path[:-2], _dotted(*path[-2:-1]), path[-1]
        grouped.setdefault(title, {}).setdefault(label, {})[column] = format_value(value)
    singles: dict[str, dict[str, str]] = {}
    tables: list[SummaryTable] = []
    for title, rows in grouped.items():
        alike: dict[tuple[str, ...], list[str]] = {}
        for label, cells in rows.items():
            alike.setdefault(tuple(cells), []).append(label)
        for columns, labels in alike.items():
            if len(labels) >= 2 and len(columns) >= 2 and "" not in labels:
                tables.append(_table(title, {label: rows[label] for label in labels}))
                continue
            for label in labels:
                singles.update({_dotted(*title, label, c): {"value": rows[label][c]} for c in columns})
    if singles:
        by_depth = sorted(singles, key=lambda key: key.count("."))  # top-level quantities first
        tables.insert(0, _table((), {key: singles[key] for key in by_depth}, transpose=False))
    return Summary(tuple(tables[:MAX_TABLES]), tuple(json_only), max(0, len(tables) - MAX_TABLES))
