"""Section (d) of the tight-assembly experiment (:mod:`contactkit.eval.exp_tight_assembly`): generalisation
(Fig. 14, §V-E) — the M48 clustering networks applied unchanged to the Table II bolts, each with its own depth
network, C-space model and reference data.
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np

from contactkit.eval.tight_assembly_pipeline import Pipeline, TightAssemblyConfig, prepare
from contactkit.eval.tight_assembly_sim import one_step


def pair_depth_net(bolt, steps: int, seed: int):
    """The helical depth network of a Table II bolt, set up as the M48's preset (:mod:`contactkit.depth.presets`:
    r from 2 mm inside the minor to 2 mm outside the major radius, z from the bottom to 3 mm above the top) with
    ``steps`` Adam steps (§V-E: "newly [trained] ... with no experiments")."""
    from contactkit.depth import presets
    from contactkit.depth.coordinates import Coordinates, make_frame
    from contactkit.depth.training import TrainConfig, default_setup, train_depth_net

    m = bolt.meta
    frame = make_frame(Coordinates.HELICAL, pitch=m["p"], handedness=m["handedness"])
    setup = default_setup(bolt, frame, r_range=(m["minor_radius"] - presets.THREAD_PAD,
                                                m["major_radius"] + presets.THREAD_PAD),
                          z_range=(0.0, m["length"] + presets.REACH_PAD))
    samples = min(300_000, max(20_000, 15 * steps))
    return train_depth_net(bolt, setup, TrainConfig(samples=samples, steps=steps, batch=8192, lr=3e-3, lr_final=1e-7,
                                                    fit_band=1e-3, seed=seed))


def generalization(m48: Pipeline, config: TightAssemblyConfig, rng: np.random.Generator, progress) -> list[dict]:
    """(d) The M48 clustering applied unchanged to the first ``config.pairs`` Table II pairs (Fig. 14): each pair
    gets its own depth network, C-space model and reference data; one-step force RMSE of ours and K-means/PGS over
    all its rows (none of them was used to fit the clustering)."""
    from contactkit.assembly.task import bolting_task
    from contactkit.geometry.fasteners import GENERALISATION_PAIRS

    out = []
    for spec in GENERALISATION_PAIRS[:config.pairs]:
        start = time.perf_counter()
        base = bolting_task(spec.diameter, spec.pitch, depth_net=None)
        net = pair_depth_net(base.static, config.depth_steps, int(rng.integers(2**31)))
        task = dataclasses.replace(base, depth_net=net)
        p = prepare(task, config, rng, clustering=m48.ours, reference_steps=config.pair_reference_steps)
        numbers, _ = one_step(p, p.train + p.test, config, rng)
        out.append({"name": spec.name, "group": spec.group, "diameter_mm": spec.diameter * 1e3,
                    "pitch_mm": spec.pitch * 1e3, "ours_force_rmse_N": numbers["ours_force_rmse_N"],
                    "kmeans_pgs_force_rmse_N": numbers["kmeans_pgs_force_rmse_N"], "rows": numbers["one_step_rows"],
                    "depth_steps": config.depth_steps, "reference": p.reference,
                    "seconds": time.perf_counter() - start})
        progress(f"generalization {spec.name}: ours {numbers['ours_force_rmse_N']:.3g} N, K-means/PGS "
                 f"{numbers['kmeans_pgs_force_rmse_N']:.3g} N")
    return out

