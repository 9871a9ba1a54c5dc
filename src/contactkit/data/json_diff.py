"""Readable differences between two parsed JSON values: dotted paths, old → new, values cut short.

Used to say *what* differs when a dataset cannot be resumed with other settings, instead of printing both
scene descriptions whole (tens of kilobytes).
"""

from __future__ import annotations

import json

import numpy as np

DIFF_VALUE_CHARS = 40
"""Longest value shown by :func:`json_diff` [characters]; longer ones end in an ellipsis."""
DIFF_MAX_ENTRIES = 8
"""Most differing paths a one-line summary lists (:meth:`contactkit.data.schema.DatasetMeta.differences`)."""


def _numeric_array(value) -> np.ndarray | None:
    """``value`` as a float array when it is a non-empty, rectangular (nested) list of numbers, else None."""
    if not (isinstance(value, list) and value):
        return None
    try:
        arr = np.asarray(value)
    except (TypeError, ValueError):  # ragged
        return None
    return arr.astype(np.float64) if arr.dtype.kind in "iuf" else None


def _short(value) -> str:
    text = json.dumps(value, ensure_ascii=False) if isinstance(value, (dict, list, str)) else repr(value)
    return text if len(text) <= DIFF_VALUE_CHARS else text[: DIFF_VALUE_CHARS - 1] + "…"


def json_diff(path: str, a, b) -> list[str]:
    """``"path: a → b"`` for each place where the parsed JSON values ``a`` (old) and ``b`` (new) differ.

    Dicts are compared key by key (``path.key``; a missing key shows as ``(absent)``), numeric arrays (nested
    lists of numbers) as one entry (``k of n values differ (max |Δ| d)`` or their two shapes), other lists of
    equal length item by item (``path[i]``), anything else whole; values are cut to :data:`DIFF_VALUE_CHARS`.
    """
    out: list[str] = []
    _diff_paths(path, a, b, out)
    return out


def _diff_paths(path: str, a, b, out: list[str]) -> None:
    if isinstance(a, dict) and isinstance(b, dict):
        for k in list(a) + [k for k in b if k not in a]:
            if k not in a or k not in b:
                old, new = (_short(a[k]) if k in a else "(absent)"), (_short(b[k]) if k in b else "(absent)")
                out.append(f"{path}.{k}: {old} → {new}")
            else:
                _diff_paths(f"{path}.{k}", a[k], b[k], out)
    elif _numeric_array(a) is not None and _numeric_array(b) is not None:
        x, y = _numeric_array(a), _numeric_array(b)
        if x.shape != y.shape:
            out.append(f"{path}: array of shape {x.shape} → {y.shape}")
        elif not np.array_equal(x, y, equal_nan=True):
            n = int(np.count_nonzero(~((x == y) | (np.isnan(x) & np.isnan(y)))))
            out.append(f"{path}: {n} of {x.size} values differ (max |Δ| {np.nanmax(np.abs(x - y)):.3g})")
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _diff_paths(f"{path}[{i}]", x, y, out)
    elif a != b:
        out.append(f"{path}: {_short(a)} → {_short(b)}")
