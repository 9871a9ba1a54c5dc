"""Mismatch families of the "real" world (issue 32 part 2): draws within the stated ranges, seeded, applied."""

import dataclasses

import numpy as np
import pytest

from contactkit.errors import InvalidInputError
from contactkit.pushing.env import DR_BOUNDS, DR_PHYSICS
from contactkit.pushing.mismatch import (
    NOMINAL_ARMATURE,
    PATCH_EXTENT,
    PATCH_ORIGIN,
    REAL_RANGES,
    PhysicsDraw,
    apply_draw,
    draw_physics,
    real_draw,
)
from contactkit.pushing.scene import ObjectKind, PushScene

SCALES = ("object_mass_scale", "pusher_mass_scale", "mu_contact_scale", "mu_ground_scale")


def _draws(n=300):
    return [real_draw(0, i % 2, i % 3, i) for i in range(n)]


def test_draws_stay_within_the_stated_ranges_and_fill_them():
    draws = _draws()
    for name in SCALES:
        lo, hi = getattr(REAL_RANGES, name)
        v = np.array([getattr(d, name) for d in draws])
        assert v.min() >= lo and v.max() <= hi and v.max() - v.min() > 0.9 * (hi - lo), name
    com = np.array([d.com_offset for d in draws])
    tip = np.array([d.tip_offset for d in draws])
    assert np.abs(com).max() <= REAL_RANGES.com_offset_m and np.abs(com).max() > 0.95 * REAL_RANGES.com_offset_m
    assert np.all(np.abs(tip) <= np.array(REAL_RANGES.tip_offset_m))
    arm = np.array([d.armature for d in draws]) / np.array(NOMINAL_ARMATURE)
    damp = np.array([d.damping_scale for d in draws])
    for v, (lo, hi) in ((arm, REAL_RANGES.armature_scale), (damp, REAL_RANGES.damping_scale)):
        assert v.min() >= lo and v.max() <= hi
    patch = np.concatenate([np.ravel(d.patches.scales) for d in draws])
    assert patch.min() >= REAL_RANGES.patch_scale[0] and patch.max() <= REAL_RANGES.patch_scale[1]
    grid = np.asarray(draws[0].patches.scales)
    assert grid.shape == tuple(int(np.ceil(e / REAL_RANGES.patch_cell_m)) for e in PATCH_EXTENT)
    assert draws[0].patches.origin == PATCH_ORIGIN


def test_draws_are_seeded():
    """Same key: the same world; another trial or seed: another."""
    assert real_draw(3, 0, 1, 7) == real_draw(3, 0, 1, 7)
    assert real_draw(3, 0, 1, 7) != real_draw(3, 0, 1, 8) != real_draw(4, 0, 1, 8)
    rng_a, rng_b = np.random.default_rng(5), np.random.default_rng(5)
    assert draw_physics(rng_a) == draw_physics(rng_b)


def test_training_randomisation_covers_every_real_range():
    """The ranges were fixed together: every real draw lies inside the training distribution."""
    for name, key in (("object_mass_scale", "object_mass_scale"), ("pusher_mass_scale", "pusher_mass_scale")):
        assert DR_BOUNDS[key][0] <= getattr(REAL_RANGES, name)[0] <= getattr(REAL_RANGES, name)[1] <= DR_BOUNDS[key][1]
    for name, nominal in (("mu_contact", PushScene().mu_contact), ("mu_ground", PushScene().mu_ground)):
        lo, hi = getattr(REAL_RANGES, f"{name}_scale")
        assert DR_BOUNDS[name][0] <= lo * nominal and hi * nominal <= DR_BOUNDS[name][1]
    assert DR_PHYSICS.com_offset_m >= REAL_RANGES.com_offset_m
    assert np.all(np.array(DR_PHYSICS.tip_offset_m) >= np.array(REAL_RANGES.tip_offset_m))
    for name in ("damping_scale", "armature_scale", "patch_scale"):
        dr, real = getattr(DR_PHYSICS, name), getattr(REAL_RANGES, name)
        assert dr[0] <= real[0] and real[1] <= dr[1]


def test_apply_draw_sets_every_family_and_the_default_is_none():
    scene = PushScene.for_object(ObjectKind.WEDGE)
    draw = real_draw(1, 1, 0, 0)
    true = apply_draw(scene, draw)
    assert true.object_mass == pytest.approx(scene.object_mass * draw.object_mass_scale)
    assert true.mu_ground == pytest.approx(scene.mu_ground * draw.mu_ground_scale)
    assert (true.com_offset, true.tip_offset, true.joint_armature, true.friction_patches) == (
        draw.com_offset, draw.tip_offset, draw.armature, draw.patches)
    plain = apply_draw(scene, PhysicsDraw())
    assert plain.object_mass == scene.object_mass and plain.com_offset == (0.0, 0.0) and plain.friction_patches is None


def test_bad_ranges_refused():
    with pytest.raises(InvalidInputError):
        dataclasses.replace(REAL_RANGES, damping_scale=(2.0, 0.5))
    with pytest.raises(InvalidInputError):
        dataclasses.replace(REAL_RANGES, com_offset_m=-0.001)
