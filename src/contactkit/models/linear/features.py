"""Feature maps ``w = Ω(q, u)`` (eq 1) for the linear force model, and the paper's map (eq 18).

A feature map is any callable with an integer ``dim`` (n_w) that turns the tool pose ``(r, R)`` and
the impedance-controller command ``(r_des, φ)`` into a feature vector; the model is linear in ``w``
(eq 2), so a map that is linear in the command keeps the force-minimising controller (eq 19) convex.
Maps accept numpy arrays or torch tensors and return the same kind, batch dimensions first.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np
import torch

from contactkit.errors import InvalidInputError
from contactkit.model import ActionMode
from contactkit.rotations import mat_to_quat, quat_to_mat, quat_to_rotvec

POSE_FEATURE_DIM = 3 + 9 + 3 + 3 + 1
"""n_w of eq 18: position, vec(R), commanded position, axis-angle command, bias."""


@runtime_checkable
class FeatureMap(Protocol):
    """Interface of a feature map (eq 1): ``dim`` and ``__call__(r, R, r_des, phi) -> w``.

    Shapes: ``r`` ``(*B, 3)`` [m], ``R`` ``(*B, 3, 3)`` (tool → world), ``r_des`` ``(*B, 3)`` [m],
    ``phi`` ``(*B, 3)`` [rad]; returns ``w`` ``(*B, dim)``.
    """

    @property
    def dim(self) -> int:
        """Length n_w of the feature vector."""
        ...

    def __call__(self, r, R, r_des, phi): ...


def _is_torch(*xs) -> bool:
    return any(isinstance(x, torch.Tensor) for x in xs)


def _check_shapes(r, R, r_des, phi) -> None:
    shapes = {"r": tuple(r.shape), "R": tuple(R.shape), "r_des": tuple(r_des.shape), "phi": tuple(phi.shape)}
    batch = shapes["r"][:-1]
    ok = (
        shapes["r"][-1:] == (3,)
        and shapes["R"] == (*batch, 3, 3)
        and shapes["r_des"] == (*batch, 3)
        and shapes["phi"] == (*batch, 3)
    )
    if not ok:
        raise InvalidInputError(f"pose features expect r, r_des, phi (*B, 3) and R (*B, 3, 3), got {shapes}")


@dataclass(frozen=True)
class PoseCommandFeatures:
    """The feature vector of eq 18: ``w = vcat(r, vec(R), r_des, φ, 1)``, n_w = 19.

    ``vec(R)`` stacks the columns of ``R`` (column-major, the usual vec operator). ``r`` is the tool
    position [m] and ``R`` its attitude (tool → world), ``r_des`` the position sent to the impedance
    controller [m], ``φ`` the axis-angle from the current to the desired attitude [rad] (see
    :func:`attitude_error`), and the trailing 1 carries a constant bias.
    """

    @property
    def dim(self) -> int:
        """n_w = 19."""
        return POSE_FEATURE_DIM

    def __call__(self, r, R, r_des, phi):
        """Eq 18 features ``(*B, 19)`` (same array kind as the inputs, float64 for numpy)."""
        if _is_torch(r, R, r_des, phi):
            ref = next(x for x in (r, R, r_des, phi) if isinstance(x, torch.Tensor))
            r, R, r_des, phi = (
                torch.as_tensor(x, dtype=ref.dtype, device=ref.device) for x in (r, R, r_des, phi)
            )
            _check_shapes(r, R, r_des, phi)
            vec_R = R.mT.reshape(*R.shape[:-2], 9)
            return torch.cat([r, vec_R, r_des, phi, torch.ones_like(r[..., :1])], dim=-1)
        r, R, r_des, phi = (np.asarray(x, dtype=np.float64) for x in (r, R, r_des, phi))
        _check_shapes(r, R, r_des, phi)
        vec_R = np.swapaxes(R, -1, -2).reshape(*R.shape[:-2], 9)
        return np.concatenate([r, vec_R, r_des, phi, np.ones_like(r[..., :1])], axis=-1)


def attitude_error(R, R_des):
    """Axis-angle ``φ`` ``(*B, 3)`` [rad] of the rotation from ``R`` to ``R_des``, in the tool frame.

    ``φ = Log(Rᵀ R_des)``, so that ``R_des = R Exp(φ)``; angle in ``[0, π]``. ``R`` and ``R_des`` are
    ``(*B, 3, 3)`` rotation matrices (tool → world); numpy in, numpy out; torch in, torch out.
    """
    if _is_torch(R, R_des):
        import roma

        ref = R if isinstance(R, torch.Tensor) else R_des
        R, R_des = (torch.as_tensor(x, dtype=ref.dtype, device=ref.device) for x in (R, R_des))
        if R.shape[-2:] != (3, 3) or R_des.shape != R.shape:
            raise InvalidInputError(
                f"attitude_error expects R, R_des (*B, 3, 3), got {R.shape}, {R_des.shape}"
            )
        return roma.rotmat_to_rotvec(R.mT @ R_des)
    R, R_des = np.asarray(R, dtype=np.float64), np.asarray(R_des, dtype=np.float64)
    if R.shape[-2:] != (3, 3) or R_des.shape != R.shape:
        raise InvalidInputError(f"attitude_error expects R, R_des (*B, 3, 3), got {R.shape}, {R_des.shape}")
    return quat_to_rotvec(mat_to_quat(np.swapaxes(R, -1, -2) @ R_des))


def features_from_episode(episode, action_mode=ActionMode.POSE_DELTA, feature_map: FeatureMap | None = None):
    """Features ``W`` and F/T readings ``Y`` of a recorded episode (an imported robot log, a collection) for LML.

    Step ``t`` pairs the state before the step with its command and its reading, as the connector calibration
    does: ``r = pos[t]``, ``R = R(quat[t])`` (tool → world); the pose-delta command ``(Δr, Δφ)`` (world frame:
    ``r_des = r + Δr``, ``R_des = Exp(Δφ) R``, the impedance controller's composition) gives
    ``r_des = r + Δr`` and ``φ = Log(Rᵀ R_des) = Rᵀ Δφ`` (tool frame, as :func:`attitude_error`); then
    ``w_t = Ω(r, R, r_des, φ)`` (eq 1; eq 18 by default) and ``y_t = wrench[t]``. The command is taken as logged
    (a robot log's pose targets are not clipped to a controller's step limits).

    Args:
        episode: anything with ``pos`` ``(T+1, 3)`` [m, world], ``quat`` ``(T+1, 4)`` (w, x, y, z), ``command``
            ``(T, 6)`` and ``wrench`` ``(T, 6)`` [N, N·m, sensor frame] (a :class:`contactkit.data.Episode`).
        action_mode: what ``command`` holds (the dataset's ``meta.action_mode``); must be ``POSE_DELTA``.
        feature_map: default :class:`PoseCommandFeatures` (eq 18).

    Returns:
        ``(W (T, n_w), Y (T, 6))`` float64 numpy arrays.

    Raises:
        InvalidInputError: wrench commands (eq 18 needs pose targets), or inconsistent shapes.
    """
    if ActionMode(action_mode) is not ActionMode.POSE_DELTA:
        raise InvalidInputError(f"features_from_episode needs pose-delta commands (pose targets, eq 18), got "
                                f"{ActionMode(action_mode).value!r} commands; import the log's command_pose stream")
    pos, quat = np.asarray(episode.pos, dtype=np.float64), np.asarray(episode.quat, dtype=np.float64)
    command, wrench = np.asarray(episode.command, dtype=np.float64), np.asarray(episode.wrench, dtype=np.float64)
    T = command.shape[0] if command.ndim == 2 else -1
    shapes = (pos.shape, quat.shape, command.shape, wrench.shape)
    if T < 1 or shapes != ((T + 1, 3), (T + 1, 4), (T, 6), (T, 6)):
        raise InvalidInputError(f"features_from_episode expects pos (T+1, 3), quat (T+1, 4), command and wrench "
                                f"(T, 6), got {pos.shape}, {quat.shape}, {command.shape}, {wrench.shape}")
    R = quat_to_mat(quat[:-1])
    phi = np.einsum("tji,tj->ti", R, command[:, 3:])  # Rᵀ Δφ
    fmap = feature_map if feature_map is not None else PoseCommandFeatures()
    return np.asarray(fmap(pos[:-1], R, pos[:-1] + command[:, :3], phi), dtype=np.float64), wrench.copy()
