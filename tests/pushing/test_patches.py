"""Friction patches over the table (issue 32 part 2)."""

import numpy as np
import pytest

from contactkit.errors import InvalidInputError
from contactkit.pushing.patches import FrictionPatches, draw_patches


def test_scale_at_reads_the_cell_and_one_outside():
    p = FrictionPatches((0.0, 0.0), 0.1, ((1.0, 2.0), (3.0, 4.0)))
    pts = np.array([[0.05, 0.05], [0.05, 0.15], [0.15, 0.05], [0.19, 0.19], [-0.01, 0.0], [0.25, 0.05]])
    np.testing.assert_array_equal(p.scale_at(pts), [1.0, 2.0, 3.0, 4.0, 1.0, 1.0])


def test_draw_covers_the_extent_within_the_range():
    p = draw_patches(np.random.default_rng(0), (0.2, -0.3), (0.5, 0.6), 0.05, (0.8, 1.2))
    grid = np.asarray(p.scales)
    assert grid.shape == (10, 12) and grid.min() >= 0.8 and grid.max() <= 1.2 and len(np.unique(grid)) == 120
    assert p == draw_patches(np.random.default_rng(0), (0.2, -0.3), (0.5, 0.6), 0.05, (0.8, 1.2))


@pytest.mark.parametrize("bad", [dict(cell=0.0), dict(scales=((),)), dict(scales=((-1.0,),)), dict(origin=(0.0,))])
def test_bad_patches_refused(bad):
    kwargs = dict(origin=(0.0, 0.0), cell=0.1, scales=((1.0,),)) | bad
    with pytest.raises(InvalidInputError):
        FrictionPatches(**kwargs)
