"""Friction that varies over the table: a grid of square patches, each scaling the table's friction coefficient.

A real table is not one coefficient: wear, dust, finish and spilled residue make ``μ`` a function of where the
object stands (Yu, Bauza, Fazeli, Rodriguez, "More than a million ways to be pushed", IROS 2016, measured the
friction of their pushing surfaces at many locations and found it location dependent). :class:`FrictionPatches`
is that field: cells of ``cell`` metres from ``origin``, cell ``(i, j)`` multiplying the nominal ``μ_ground`` by
``scales[i][j]``; outside the grid the scale is 1.

Frames: world ``(x, y)`` on the table top. Units SI.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from contactkit.errors import InvalidInputError


@dataclass(frozen=True)
class FrictionPatches:
    """The friction field of the table (module doc).

    Attributes:
        origin: ``(x, y)`` [m] of the grid's lower-left corner (world).
        cell: side of one square patch [m].
        scales: ``scales[i][j]`` ≥ 0 multiplies ``μ_ground`` on ``origin + cell · ([i, i+1) × [j, j+1))``; a tuple of
            tuples so that the scene stays hashable.
    """

    origin: tuple[float, float]
    cell: float
    scales: tuple[tuple[float, ...], ...]

    def __post_init__(self) -> None:
        arr = np.asarray(self.scales, dtype=np.float64)
        if arr.ndim != 2 or arr.size == 0 or not np.all(np.isfinite(arr)) or np.any(arr < 0.0):
            raise InvalidInputError(f"FrictionPatches.scales must be a non-empty 2-D grid of finite numbers >= 0, "
                                    f"got shape {arr.shape}")
        if not (math.isfinite(self.cell) and self.cell > 0.0) or len(self.origin) != 2:
            raise InvalidInputError(f"FrictionPatches needs cell > 0 [m] and a 2-D origin, got {self.cell!r}, "
                                    f"{self.origin!r}")

    def scale_at(self, points) -> np.ndarray:
        """``(N,)`` friction scale under world points ``(N, 2)`` [m] (1 outside the grid)."""
        p = np.asarray(points, dtype=np.float64).reshape(-1, 2)
        grid = np.asarray(self.scales, dtype=np.float64)
        idx = np.floor((p - np.asarray(self.origin)) / self.cell).astype(int)
        inside = (idx >= 0).all(1) & (idx[:, 0] < grid.shape[0]) & (idx[:, 1] < grid.shape[1])
        out = np.ones(len(p))
        out[inside] = grid[idx[inside, 0], idx[inside, 1]]
        return out


def draw_patches(rng: np.random.Generator, origin: tuple[float, float], extent: tuple[float, float], cell: float,
                 scale_range: tuple[float, float]) -> FrictionPatches:
    """Patches covering ``extent`` ``(x, y)`` [m] from ``origin`` [m], each scale uniform in ``scale_range``."""
    nx, ny = (max(1, math.ceil(e / cell)) for e in extent)
    scales = rng.uniform(*scale_range, size=(nx, ny))
    return FrictionPatches((float(origin[0]), float(origin[1])), float(cell),
                           tuple(tuple(float(v) for v in row) for row in scales))
