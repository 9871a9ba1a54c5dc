"""``contactkit assembly``: the tight-tolerance assembly tasks of the data-driven simulation paper (issue 17)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import numpy as np
import typer

from contactkit.cli._app import app, check_outputs, console, fail, progress
from contactkit.errors import ContactkitError, InvalidInputError

assembly_app = typer.Typer(help="Tight-tolerance assembly (peg-in-hole, bolting): reference data and simulation.",
                           no_args_is_help=True)
app.add_typer(assembly_app, name="assembly")


@assembly_app.command("reference")
def reference(
    out: Annotated[Path, typer.Option(help="output HDF5 file (resumed if it exists with the same task and seed)")],
    task: Annotated[str, typer.Option(help="peg-in-hole | bolting")] = "peg-in-hole",
    steps: Annotated[int, typer.Option(help="rows of 10 ms (each ten 1 ms reference steps)")] = 20000,
    seed: int = 0,
    diameter: Annotated[float | None, typer.Option(
        help="bolting: ISO bolt diameter [m] (a Table II pair, e.g. 0.039), as collect --diameter")] = None,
    pitch: Annotated[float | None, typer.Option(
        help="bolting: thread pitch [m] (e.g. 0.004), as collect --pitch")] = None,
) -> None:
    """Make a reference dataset: random human-like setpoint trajectories through the high-fidelity 1 ms
    simulation (exact contacts, all nodes, Coulomb cone), stored at 10 ms rows."""
    from contactkit.assembly import assembly_task
    from contactkit.assembly.reference_data import episode_plan, reference_episode, reference_meta
    from contactkit.data import DatasetWriter

    try:
        check_outputs((out, "--out", False))
        if steps < 1:
            raise InvalidInputError(f"--steps must be >= 1, got {steps}")
        if seed < 0:
            raise InvalidInputError(f"--seed must be >= 0, got {seed}")
        sizes = {} if diameter is None and pitch is None else {"diameter": diameter, "pitch": pitch}
        if sizes and task != "bolting":
            raise InvalidInputError(f"--diameter/--pitch are for --task bolting, got --task {task}")
        t = assembly_task(task, depth_net=None, **sizes)
        plan = episode_plan(t, steps, np.random.default_rng(seed))
        stats = []
        with DatasetWriter(out, meta=reference_meta(t, seed)) as writer, progress() as bar:
            skip = writer.n_committed
            done = sum(rows for _, _, rows in plan[:skip])
            job = bar.add_task(f"reference {task}", total=steps, completed=done)
            for kind, ep_seed, rows in plan[skip:]:
                start = done

                def report(r: int, start: int = start) -> None:
                    bar.update(job, completed=start + r)

                episode, st = reference_episode(t, kind, ep_seed, rows, progress=report)
                writer.append_episode(episode)
                stats.append(st)
                done += rows
                bar.console.print(f"{kind.value:>9}: {st.seconds_per_step * 1e3:6.2f} ms/step, contacts "
                                  f"{st.mean_contacts:6.0f} mean {st.max_contacts:5d} max, penetration "
                                  f"{st.max_penetration * 1e6:6.2f} µm, unconverged {st.unconverged}, "
                                  f"|F| max {np.linalg.norm(episode.wrench[:, :3], axis=1).max():6.1f} N")
        if skip:
            console.print(f"resumed after {skip} committed episodes")
        if stats:
            ms = np.mean([s.seconds_per_step for s in stats]) * 1e3
            console.print(f"wrote {out}: {len(plan)} episodes, {steps} rows; {ms:.2f} ms per 1 ms step, max "
                          f"penetration {max(s.max_penetration for s in stats) * 1e6:.2f} µm, unconverged solves "
                          f"{sum(s.unconverged for s in stats)}")
    except ContactkitError as exc:
        fail(exc)
