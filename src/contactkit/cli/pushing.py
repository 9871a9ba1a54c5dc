"""``contactkit learn pushing``: train the pushing paper's residual DDPG policy (§II-C) and write its model card."""

from __future__ import annotations

import hashlib
import json
import platform
import time
from pathlib import Path
from typing import Annotated

import numpy as np
import typer

from contactkit.cli._app import check_outputs, console, fail, progress
from contactkit.cli.learn_depth import learn_app
from contactkit.errors import ContactkitError, InvalidInputError

ACTOR_FILE = "residual.safetensors"
"""The actor's file name in ``--out`` (its JSON card is written beside it as ``residual.json``)."""
CURVE_FILE = "training_curve.json"
"""Per-episode returns and mean absolute force/torque errors (Fig. 5) in ``--out``."""
CURVE_BLOCK = 20
"""Episodes per block in the model card's training-curve table."""
SNAPSHOT_DIR = "snapshots"
"""Folder in ``--out`` of the actor snapshots (``--snapshot-every``), one ``episode-NNNNN.safetensors`` each."""


def curve_blocks(errors: np.ndarray, returns: np.ndarray, block: int = CURVE_BLOCK) -> list[dict]:
    """Means of consecutive ``block``-episode blocks of ``errors`` ``(E, 3)`` (normal, tangential [N], torque
    [N m]) and ``returns`` ``(E,)``; the last block may be shorter."""
    rows = []
    for lo in range(0, len(returns), block):
        e = errors[lo:lo + block]
        rows.append({"episodes": [lo + 1, lo + len(e)], "return": float(np.mean(returns[lo:lo + block])),
                     "normal_N": float(np.nanmean(e[:, 0])), "tangential_N": float(np.nanmean(e[:, 1])),
                     "torque_Nm": float(np.nanmean(e[:, 2]))})
    return rows


def model_card(path: Path, training: dict, blocks: list[dict], command: str) -> str:
    """Markdown model card of a trained residual actor (what ``contactkit learn pushing`` writes as README.md)."""
    from importlib.metadata import version

    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    lines = [
        "# Residual pushing policy π_θ (DDPG)", "",
        "The residual actor of the hybrid-contact pushing paper (§II-C, Algorithm 1, eqs 16–17), trained by "
        "stable-baselines3 DDPG with Ornstein–Uhlenbeck noise in the hybrid MLCP model "
        "(`contactkit.pushing.env.PushingResidualEnv`: cube and wedge, constant / trapezoidal / chirp profiles, "
        "domain randomisation of `env.DR_BOUNDS` and `env.DR_PHYSICS`). Load with "
        "`contactkit.pushing.load_residual(path)` (safetensors, never unpickled).", "",
        f"- file: `{path.name}`, {path.stat().st_size} bytes, sha256 `{digest}`",
        f"- network: {training['obs_dim']} observations → {' → '.join(f'{h} ReLU' for h in training['hidden'])} → "
        "3 tanh actions (push-frame n, t velocity and yaw rate × " + _scale_text(training) + ")",
        f"- observation: {training.get('observation', '')}; reward {training.get('reward', 'eq17')}; "
        f"{training.get('envs', 1)} environment(s)",
        f"- training: {training['steps']} environment steps ({training['steps_asked']} asked), "
        f"{training['episodes']} episodes of up to {training['episode_steps']} steps (an episode that loses the "
        f"object ends early), {training['wall_s']:.0f} s wall on "
        f"one torch thread, seed {training['seed']}, lr {training['learning_rate']}, batch {training['batch_size']}, "
        f"{training['gradient_steps']} gradient step(s) every {training['train_freq']} env step(s), OU σ "
        f"{training['ou_sigma']}, θ {training['ou_theta']} per {training.get('ou_dt_steps', '0.01 s of')} step(s), γ "
        f"{training.get('gamma', 0.99)}; stopped by the wall-time limit: "
        f"{training['stopped_by_wall_limit']}",
        "- start: " + ("zero residual (output layer zeroed: the PD alone)" if training.get("zero_init") else
                       "random actor") +
        f"; only the critic learns for the first {training.get('critic_warmup_updates', 0)} updates; actor learning "
        f"rate {training.get('actor_learning_rate', training['learning_rate'])}",
        f"- trained on top of the joint PD of eq 15 with K_p {training.get('kp')} N m/rad, K_v {training.get('kv')} "
        "N m s/rad (`contactkit.pushing.controller.KP`, `KV` when trained)",
        f"- made with stable-baselines3 {version('stable-baselines3')}, torch {version('torch')}, gymnasium "
        f"{version('gymnasium')}, numpy {np.__version__}, Python {platform.python_version()}, "
        f"{time.strftime('%Y-%m-%d', time.gmtime())}",
        "", f"Training curve (Fig. 5; full per-episode data in `{CURVE_FILE}`): block means over {CURVE_BLOCK} "
        "episodes of the per-episode mean absolute errors in the randomised model.", "",
        "| episodes | return | normal [N] | tangential [N] | torque [N m] |", "|---|---:|---:|---:|---:|"]
    lines += [f"| {b['episodes'][0]}–{b['episodes'][1]} | {b['return']:.0f} | {b['normal_N']:.3f} | "
              f"{b['tangential_N']:.3f} | {b['torque_Nm']:.4f} |" for b in blocks]
    lines += ["", "Made by (from the repository root):", "", "```", command, "```", ""]
    return "\n".join(lines)


def _scale_text(card: dict) -> str:
    """How the card's actions become velocities, in words."""
    if card.get("action_scale") == "relative":
        return f"{card['action_speed_fraction']} of the plan's mean pusher speed and yaw rate"
    return f"{card['action_lin_scale_mps']} m/s, {card['action_ang_scale_radps']} rad/s"


@learn_app.command("pushing")
def learn_pushing(
    out: Annotated[Path, typer.Option(help=f"output folder: gets {ACTOR_FILE}, its card, {CURVE_FILE}, README.md")],
    steps: Annotated[int, typer.Option(help="environment steps asked (2000 per episode)")] = 200_000,
    seed: int = 0,
    wall_limit: Annotated[float | None, typer.Option(
        help="stop at the first episode end after this many seconds (the card records the steps done)")] = None,
    train_freq: Annotated[int, typer.Option(help="environment steps per DDPG gradient step")] = 4,
    episode_steps: Annotated[int, typer.Option(
        help="steps per episode (2000 = 20 s at 100 Hz, §IV-A; fewer only for smoke tests)")] = 2000,
    zero_init: Annotated[bool, typer.Option(
        help="start from a zero residual (the PD alone) instead of a random actor")] = True,
    critic_warmup: Annotated[int, typer.Option(
        help="gradient updates that train only the critic before the actor first changes")] = 5000,
    actor_lr: Annotated[float | None, typer.Option(
        help="the actor's learning rate (default: the critic's 1e-3, as stable-baselines3)")] = None,
    envs: Annotated[int, typer.Option(help="environments stepped in parallel (subprocesses when > 1)")] = 1,
    reward: Annotated[str, typer.Option(help="eq17+pose (default, issue 32) or eq17 (the paper's, the ablation)")]
    = "eq17+pose",
    snapshot_every: Annotated[int | None, typer.Option(
        help=f"also write the actor every N episodes to --out/{SNAPSHOT_DIR}/ (choose one with pushing-select)")]
    = None,
) -> None:
    """Train the residual pushing policy (DDPG + OU noise, hybrid model, domain randomisation) on one torch thread."""
    from contactkit.pushing.env import RewardKind
    from contactkit.pushing.residual import TrainOptions, save_residual, train_residual

    try:
        check_outputs((out, "--out", True))
        if steps < 1 or train_freq < 1 or episode_steps < 2 or critic_warmup < 0:
            raise InvalidInputError(f"--steps and --train-freq must be >= 1, --episode-steps >= 2 and --critic-warmup "
                                    f">= 0, got {steps}, {train_freq}, {episode_steps}, {critic_warmup}")
        if reward not in {k.value for k in RewardKind}:
            raise InvalidInputError(f"--reward must be one of {[k.value for k in RewardKind]}, got {reward!r}")
        options = TrainOptions(envs=envs, reward=RewardKind(reward), snapshot_every=snapshot_every)
        command = (f"nice -n 10 contactkit learn pushing --out {out} --steps {steps} --seed {seed} "
                   f"--train-freq {train_freq}" + (f" --wall-limit {wall_limit:g}" if wall_limit else "")
                   + (f" --episode-steps {episode_steps}" if episode_steps != 2000 else "")
                   + ("" if zero_init else " --no-zero-init") + f" --critic-warmup {critic_warmup}"
                   + (f" --actor-lr {actor_lr:g}" if actor_lr is not None else "")
                   + (f" --envs {envs}" if envs != 1 else "") + (f" --reward {reward}" if reward != "eq17+pose" else "")
                   + (f" --snapshot-every {snapshot_every}" if snapshot_every else ""))
        with progress() as bar:
            job = bar.add_task("learn pushing", total=steps)

            def report(done: int, total: int, ret: float) -> None:
                bar.update(job, completed=done, description=f"learn pushing (last return {ret:.0f})")

            result = train_residual(steps, seed, report, episode_steps=episode_steps, train_freq=train_freq,
                                    wall_limit_s=wall_limit, learning_starts=min(1000, 2 * episode_steps),
                                    zero_init=zero_init, critic_warmup=critic_warmup, actor_learning_rate=actor_lr,
                                    options=options)
        out.mkdir(parents=True, exist_ok=True)
        path = save_residual(result.policy, out / ACTOR_FILE)
        for n, snap in result.snapshots:
            (out / SNAPSHOT_DIR).mkdir(exist_ok=True)
            save_residual(snap, out / SNAPSHOT_DIR / f"episode-{n:05d}.safetensors")
    except ContactkitError as exc:
        fail(exc)
    curve = {"returns": result.returns.tolist(), "errors": result.errors.tolist(),
             "columns": ["normal_N", "tangential_N", "torque_Nm"]}
    (out / CURVE_FILE).write_text(json.dumps(curve) + "\n")
    training = {**result.policy.card, **result.policy.card["training"]}
    (out / "README.md").write_text(model_card(path, training, curve_blocks(result.errors, result.returns), command))
    console.print(f"{result.episodes} episodes, {result.steps} steps in {result.wall_s:.0f} s; wrote {path}")


@learn_app.command("pushing-select")
def learn_pushing_select(
    actors: Annotated[list[Path], typer.Argument(help="residual actors (residual.safetensors) to compare")],
    per_case: Annotated[int, typer.Option(help="validation episodes per object × profile")] = 2,
    duration: Annotated[float, typer.Option(help="seconds per episode (20 s, §IV-A; shorter only for smoke tests)")]
    = 20.0,
    json_out: Annotated[Path | None, typer.Option("--json", help="also write the scores to this JSON file")] = None,
) -> None:
    """Score residual actors and the PD alone on validation draws in the randomised model (never the test trials
    nor the "real" world; contactkit.pushing.validation) and name the lowest score."""
    from rich.table import Table

    from contactkit.pushing.residual import load_residual
    from contactkit.pushing.validation import VALIDATION_SEED, score_policy, validation_draws

    try:
        check_outputs((json_out, "--json", False))
        if per_case < 1 or not duration > 0:
            raise InvalidInputError(f"--per-case must be >= 1 and --duration > 0 s, got {per_case}, {duration}")
        candidates = {"PD alone": None} | {str(a): load_residual(a) for a in actors}
        draws = validation_draws(per_case)
        scores = {}
        with progress() as bar:
            job = bar.add_task("validation episodes", total=len(candidates))
            for name, policy in candidates.items():
                scores[name] = score_policy(policy, draws, duration)
                bar.advance(job)
    except ContactkitError as exc:
        fail(exc)
    best = min(scores, key=lambda n: scores[n].score_pct)
    table = Table(title=f"{len(draws)} validation draws (seed {VALIDATION_SEED}), model world")
    for col in ("actor", "score [%]", "translation [%]", "angle [%]", "force [N]", "torque [N m]", "failed"):
        table.add_column(col)
    for name, s in scores.items():
        table.add_row(name + (" (best)" if name == best else ""), f"{s.score_pct:.2f}", f"{s.translation_pct:.2f}",
                      f"{s.angle_pct:.2f}", f"{s.force_N:.3f}", f"{s.torque_Nm:.4f}", str(s.failures))
    console.print(table)
    if json_out is not None:
        import dataclasses

        payload = {"seed": VALIDATION_SEED, "draws": len(draws), "duration_s": duration, "best": best,
                   "scores": {n: dataclasses.asdict(s) for n, s in scores.items()}}
        json_out.write_text(json.dumps(payload, indent=2) + "\n")
