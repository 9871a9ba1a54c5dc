"""The learned C-space surface ``h(q)`` of the tight-tolerance paper (§IV-A, network of §V-B).

``h`` classifies a configuration ``q = [x_c; φ]`` (COM world [m], XYZ Euler angles [rad], as
:func:`contactkit.engine.reference.solvers.virtual_constraint.configuration`) as collision free (``h > 0``) or in
collision (``h < 0``). The §V-B MLP: an input layer with tanh, two hidden layers of 64 with tanh, a sigmoid
output ``p``; ``h = 2p - 1`` (the paper's labels ±1). Trained with binary cross-entropy.

Inputs (:class:`CSpaceFeatures`):

* ``CONFIGURATION``: ``q`` itself (6). Measured on the peg (4000 boundary samples of :func:`cspace_dataset`,
  4000 Adam steps): 74.8 % held-out accuracy, no better than always answering "free" (73.8 %): the boundary is a
  few clearances (32.5 µm, ~1 mrad) wide inside a range set by the tilts near the opening (mm, 0.1 rad), too
  steep for the small MLP. (Nut: 90.3 % with ``q``, 92.9 % with ``SCREW``.)
* ``PEG_AXIS`` (peg, the default): the hole and the peg are bodies of revolution, and whether the peg's side
  touches the wall is decided at the two ends of its engaged part. Features ``[t_x, t_y, o_x, o_y, t_z]``: the
  tip centre ``t = c - R b`` (``b`` the COM in the body frame) and the point ``o = t + s a`` where the peg's axis
  ``a = R e_z`` crosses the opening's plane ``z = H`` (``s = (H - t_z)/a_z``). Lateral offsets at both ends are
  clearance-sized wherever the peg is engaged. Same data: 96.9 % held-out.
* ``SCREW`` (nut): the thread is invariant under the screw motion ``S_θ`` (turn ``θ`` about the bolt axis, advance
  ``s p θ / 2π``, ``s`` the handedness), so configurations that differ by ``S_θ`` are equally in collision. With
  ``ψ`` the heading of the nut's x-axis (``atan2(R₁₀, R₀₀)``, turns with ``S_θ`` by exactly ``θ``), the features
  ``[c'_x, c'_y, c_z, a'_x, a'_y, cos χ, sin χ]`` use the COM and the nut axis ``a = R e_z`` seen in the heading
  frame (``c' = R_z(-ψ) c``, ``a' = R_z(-ψ) a``: invariant) and the thread phase ``χ = 2π c_z / p - s ψ``
  (invariant); ``c_z`` is kept because the ends of the thread (the bolt's top) break the symmetry. A 6-D ``q``
  would have to learn the helix over every turn; these features make it one period.

Labels (:func:`cspace_dataset`): a configuration is in collision when any tool node's EXACT signed distance
(:func:`contactkit.geometry.signed_distance.signed_distance`) is below ``-COLLISION_TOL``. The exact distance is
evaluated at the nodes whose learned depth is below :data:`LABEL_SLACK` (the depth network's measured error is
≤ 0.11 mm, so the others are free; without a depth network, at every node).

Measured (this machine, 2 shared cores): labelling costs 10-12 ms per configuration (learned depth of every node,
exact distance at the deciding nodes), training 4000-8000 Adam steps 13-16 s. Held-out accuracy with the default
features: 4000 samples, 4000 steps: peg 96.9 % (73.8 % free), nut 92.9 % (36.5 % free); 20 000 samples, 8000
steps: peg 97.9 % (73.1 % free), nut 96.0 % (36.4 % free).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum

import numpy as np

from contactkit.assembly.cspace_sampling import COLLISION_TOL, label_poses, sample_poses
from contactkit.assembly.task import AssemblyKind, AssemblyTask
from contactkit.engine.reference.solvers.virtual_constraint import SurfaceFunction
from contactkit.errors import InvalidInputError
from contactkit.rotations import quat_to_mat

HIDDEN = 64
"""Width of the two hidden layers (§V-B)."""


class CSpaceFeatures(str, Enum):
    """The network's input coordinates (module docstring)."""

    CONFIGURATION = "configuration"
    PEG_AXIS = "peg-axis"
    SCREW = "screw"


@dataclass(frozen=True)
class FeatureSpec:
    """Everything the feature map needs besides ``q``.

    Attributes:
        kind: :class:`CSpaceFeatures`. pitch [m] and handedness (±1): the thread (``SCREW``).
        axis_height: [m] z of the opening's plane ``H`` (``PEG_AXIS``). com_body: the COM in the body frame [m].
    """

    kind: CSpaceFeatures
    pitch: float = 0.0
    handedness: int = 1
    axis_height: float = 0.0
    com_body: tuple[float, float, float] = (0.0, 0.0, 0.0)

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", CSpaceFeatures(self.kind))
        if self.kind is CSpaceFeatures.SCREW and not self.pitch > 0:
            raise InvalidInputError(f"screw features need a pitch > 0 m, got {self.pitch!r}")
        if self.handedness not in (1, -1):
            raise InvalidInputError(f"handedness must be +1 or -1, got {self.handedness!r}")
        object.__setattr__(self, "com_body", tuple(float(v) for v in self.com_body))

    @property
    def n_features(self) -> int:
        """Input size ``F``."""
        return {CSpaceFeatures.CONFIGURATION: 6, CSpaceFeatures.PEG_AXIS: 5, CSpaceFeatures.SCREW: 7}[self.kind]


@dataclass(frozen=True, eq=False)
class CSpaceModel:
    """The §V-B C-space MLP of one task.

    Attributes:
        spec: the input features (:class:`FeatureSpec`).
        lo, hi: ``(F,)`` feature range mapped to ``[-1, 1]``.
        weights: ``(W0 (64, F), b0 (64,), W1 (64, 64), b1 (64,), W2 (1, 64), b2 (1,))`` float64.
        task_kind, task_name: the task it was trained for.
    """

    spec: FeatureSpec
    lo: np.ndarray
    hi: np.ndarray
    weights: tuple[np.ndarray, ...]
    task_kind: str
    task_name: str



def _euler_matrices(phi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``R (N, 3, 3)`` = Rx Ry Rz of XYZ Euler ``phi (N, 3)`` and the world axes ``k (N, 3, 3)`` (k[:, i] the axis
    of ``φ_i``: ``∂R/∂φ_i = S(k_i) R``)."""
    c, s = np.cos(phi), np.sin(phi)
    n = len(phi)
    one, zero = np.ones(n), np.zeros(n)
    rx = np.stack([one, zero, zero, zero, c[:, 0], -s[:, 0], zero, s[:, 0], c[:, 0]], 1).reshape(n, 3, 3)
    ry = np.stack([c[:, 1], zero, s[:, 1], zero, one, zero, -s[:, 1], zero, c[:, 1]], 1).reshape(n, 3, 3)
    rz = np.stack([c[:, 2], -s[:, 2], zero, s[:, 2], c[:, 2], zero, zero, zero, one], 1).reshape(n, 3, 3)
    rxy = rx @ ry
    k = np.stack([np.tile([1.0, 0.0, 0.0], (n, 1)), rx[:, :, 1], rxy[:, :, 2]], 1)
    return rxy @ rz, k


def _peg_features(spec: FeatureSpec, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    rot, k = _euler_matrices(q[:, 3:])
    rb, a = rot @ np.asarray(spec.com_body), rot[:, :, 2]
    tip = q[:, :3] - rb
    dtip = np.zeros((len(q), 3, 6))
    dtip[:, :, :3] = np.eye(3)
    dtip[:, :, 3:] = -np.cross(k, rb[:, None, :]).transpose(0, 2, 1)  # column i: -k_i × (R b)
    da = np.cross(k, a[:, None, :]).transpose(0, 2, 1)  # (N, 3 xyz, 3 angles)
    s = (spec.axis_height - tip[:, 2]) / a[:, 2]
    ds = -dtip[:, 2, :] / a[:, 2, None]
    ds[:, 3:] -= (s / a[:, 2])[:, None] * da[:, 2, :]
    top = tip + s[:, None] * a
    dtop = dtip + a[:, :, None] * ds[:, None, :]
    dtop[:, :, 3:] += s[:, None, None] * da
    f = np.stack([tip[:, 0], tip[:, 1], top[:, 0], top[:, 1], tip[:, 2]], 1)
    jac = np.stack([dtip[:, 0], dtip[:, 1], dtop[:, 0], dtop[:, 1], dtip[:, 2]], 1)
    return f, jac


def _screw_features(spec: FeatureSpec, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    rot, k = _euler_matrices(q[:, 3:])
    u, a, c = rot[:, :, 0], rot[:, :, 2], q[:, :3]
    du, da = np.cross(k, u[:, None, :]), np.cross(k, a[:, None, :])  # (N, 3 angles, 3)
    psi = np.arctan2(u[:, 1], u[:, 0])
    dpsi = (u[:, 0, None] * du[:, :, 1] - u[:, 1, None] * du[:, :, 0]) / (u[:, 0] ** 2 + u[:, 1] ** 2)[:, None]
    cp, sp = np.cos(psi), np.sin(psi)
    wave, hand = 2.0 * math.pi / spec.pitch, spec.handedness
    chi = wave * c[:, 2] - hand * psi
    f = np.stack([cp * c[:, 0] + sp * c[:, 1], -sp * c[:, 0] + cp * c[:, 1], c[:, 2],
                  cp * a[:, 0] + sp * a[:, 1], -sp * a[:, 0] + cp * a[:, 1], np.cos(chi), np.sin(chi)], 1)
    jac = np.zeros((len(q), 7, 6))
    jac[:, 0, 0], jac[:, 0, 1], jac[:, 0, 3:] = cp, sp, f[:, 1, None] * dpsi
    jac[:, 1, 0], jac[:, 1, 1], jac[:, 1, 3:] = -sp, cp, -f[:, 0, None] * dpsi
    jac[:, 2, 2] = 1.0
    jac[:, 3, 3:] = cp[:, None] * da[:, :, 0] + sp[:, None] * da[:, :, 1] + f[:, 4, None] * dpsi
    jac[:, 4, 3:] = -sp[:, None] * da[:, :, 0] + cp[:, None] * da[:, :, 1] - f[:, 3, None] * dpsi
    dchi = np.zeros((len(q), 6))
    dchi[:, 2], dchi[:, 3:] = wave, -hand * dpsi
    jac[:, 5] = -f[:, 6, None] * dchi
    jac[:, 6] = f[:, 5, None] * dchi
    return f, jac


def feature_map(spec: FeatureSpec, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Features ``(N, F)`` of configurations ``q (N, 6)`` ``[COM world (m); XYZ Euler (rad)]`` and their analytic
    Jacobian ``∂f/∂q`` ``(N, F, 6)`` (module docstring; ``∂R/∂φ_i = S(k_i) R`` with ``k_i`` the world axis of
    ``φ_i``)."""
    q = np.asarray(q, dtype=np.float64).reshape(-1, 6)
    if spec.kind is CSpaceFeatures.CONFIGURATION:
        return q.copy(), np.broadcast_to(np.eye(6), (len(q), 6, 6)).copy()
    if spec.kind is CSpaceFeatures.PEG_AXIS:
        return _peg_features(spec, q)
    return _screw_features(spec, q)


def model_features(model: CSpaceModel, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`feature_map` with the model's :class:`FeatureSpec`."""
    return feature_map(model.spec, q)


def evaluate(model: CSpaceModel, q: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(h (N,), ∂h/∂q (N, 6), logit (N,))`` at configurations ``q (N, 6)``: the §V-B MLP, ``h = 2σ(logit) - 1``,
    gradient by the chain rule through tanh layers and the feature map (per metre / per radian)."""
    f, jac = model_features(model, q)
    w0, b0, w1, b1, w2, b2 = model.weights
    scale = 2.0 / (model.hi - model.lo)
    x = (f - model.lo) * scale - 1.0
    a1 = np.tanh(x @ w0.T + b0)
    a2 = np.tanh(a1 @ w1.T + b1)
    logit = (a2 @ w2.T + b2)[:, 0]
    p = 0.5 * (1.0 + np.tanh(0.5 * logit))  # σ, overflow-free
    g2 = (2.0 * p * (1.0 - p))[:, None] * w2[0] * (1.0 - a2**2)
    g1 = (g2 @ w1) * (1.0 - a1**2)
    grad = np.einsum("nf,nfq->nq", (g1 @ w0) * scale, jac)
    return 2.0 * p - 1.0, grad, logit


def surface_function(model: CSpaceModel, *, logit: bool = False, scale: float = 1.0) -> SurfaceFunction:
    """``h(q) = 2σ - 1`` of ``model`` (or, with ``logit``, the sigmoid's argument: same sign, same zero set, same
    normal direction, no saturation far from the surface), times ``scale``, as a :class:`SurfaceFunction` with the
    analytic gradient, for the C-space normal's SQP (§IV-B). One configuration per call, in numba
    (:func:`contactkit.assembly.cspace_point.point_surface`); the last ``q`` is memoised, so the value and the
    gradient at one point cost one evaluation."""
    from contactkit.assembly.cspace_point import model_arguments, point_surface

    args = model_arguments(model)
    memo: dict[str, tuple[np.ndarray, float, np.ndarray]] = {}

    def _at(q: np.ndarray) -> tuple[float, np.ndarray]:
        q = np.asarray(q, dtype=np.float64).reshape(6)
        hit = memo.get("last")
        if hit is None or not np.array_equal(hit[0], q):
            grad = np.empty(6)
            value = point_surface(*args, q.copy(), bool(logit), grad)
            hit = (q.copy(), scale * float(value), scale * grad)
            memo["last"] = hit
        return hit[1], hit[2]

    return SurfaceFunction(value=lambda q: _at(q)[0], gradient=lambda q: _at(q)[1].copy())


def default_features(task: AssemblyTask, kind: CSpaceFeatures | None = None) -> FeatureSpec:
    """The :class:`FeatureSpec` of ``task``: ``kind``, or by default ``SCREW`` for bolting and ``PEG_AXIS`` for the
    peg (module docstring)."""
    if kind is None:
        kind = CSpaceFeatures.SCREW if task.kind is AssemblyKind.BOLTING else CSpaceFeatures.PEG_AXIS
    return FeatureSpec(kind, float(task.pitch), int(task.tool.meta.get("handedness", 1)), float(task.axis_height),
                       tuple(task.body.com_body))


def configurations(task: AssemblyTask, pos: np.ndarray, quat: np.ndarray) -> np.ndarray:
    """``q (N, 6)`` = ``[COM world; XYZ Euler]`` of tool poses ``pos (N, 3)`` [m], ``quat (N, 4)`` wxyz."""
    rot = quat_to_mat(np.asarray(quat, dtype=np.float64))
    com = np.asarray(pos, dtype=np.float64) + rot @ task.body.com_body
    phi = np.stack([np.arctan2(-rot[:, 1, 2], rot[:, 2, 2]), np.arcsin(np.clip(rot[:, 0, 2], -1.0, 1.0)),
                    np.arctan2(-rot[:, 0, 1], rot[:, 0, 0])], 1)
    return np.concatenate([com, phi], 1)


@dataclass(frozen=True)
class CSpaceData:
    """Labelled configurations.

    Attributes:
        q: ``(N, 6)`` configurations ``[COM world; XYZ Euler]``. free: ``(N,)`` bool, True when collision free.
        penetration: ``(N,)`` [m] deepest exact node penetration (``≥ 0``; 0 where free of any overlap).
    """

    q: np.ndarray
    free: np.ndarray
    penetration: np.ndarray


def cspace_dataset(task: AssemblyTask, n: int, rng: np.random.Generator) -> CSpaceData:
    """``n`` labelled configurations near the boundary (:func:`sample_poses`, :func:`label_poses`)."""
    pos, quat = sample_poses(task, n, rng)
    pen = label_poses(task, pos, quat)
    return CSpaceData(configurations(task, pos, quat), pen <= COLLISION_TOL, pen)


@dataclass(frozen=True)
class TrainSettings:
    """Settings of :func:`train_cspace` (Adam on BCE; mini-batches drawn with the given generator).

    Attributes:
        steps: Adam steps; batch: mini-batch size; learning_rate; held_out: fraction of the data kept out of
        training for the reported accuracy; features: the input kind (None: :func:`default_features`).
    """

    steps: int = 6000
    batch: int = 256
    learning_rate: float = 2e-3
    held_out: float = 0.2
    features: CSpaceFeatures | None = None

    def __post_init__(self) -> None:
        if self.steps < 1 or self.batch < 1 or not self.learning_rate > 0 or not 0.0 < self.held_out < 1.0:
            raise InvalidInputError(f"bad TrainSettings {self!r}: need steps, batch >= 1, learning_rate > 0, "
                                    "0 < held_out < 1")


@dataclass(frozen=True)
class TrainReport:
    """Accuracy (fraction of correct signs of ``h``) on the training and held-out configurations, and the counts."""

    train_accuracy: float
    held_out_accuracy: float
    n_train: int
    n_held_out: int
    free_fraction: float
    final_loss: float


def accuracy(model: CSpaceModel, data: CSpaceData) -> float:
    """Fraction of ``data`` whose label ``h > 0 ⇔ free`` the model gets right."""
    h, _, _ = evaluate(model, data.q)
    return float(np.mean((h > 0) == data.free))


def train_cspace(task: AssemblyTask, data: CSpaceData, settings: TrainSettings,
                 generator) -> tuple[CSpaceModel, TrainReport]:
    """Fit the §V-B MLP to ``data`` with binary cross-entropy (labels: 1 free, 0 collision).

    Args:
        task: the task (its feature kind, pitch, handedness). data: :func:`cspace_dataset`.
        settings: :class:`TrainSettings`. generator: ``torch.Generator`` (split, initial weights, batches).
    """
    import torch

    spec = default_features(task, settings.features)
    f, _ = feature_map(spec, data.q)
    n = len(f)
    perm = torch.randperm(n, generator=generator).numpy()
    n_out = max(1, int(round(settings.held_out * n)))
    test, train = perm[:n_out], perm[n_out:]
    if len(train) < 2:
        raise InvalidInputError(f"need at least {n_out + 2} configurations to train, got {n}")
    lo, hi = f[train].min(axis=0), f[train].max(axis=0)
    hi = np.where(hi - lo > 1e-12, hi, lo + 1.0)
    x = torch.as_tensor((f[train] - lo) * (2.0 / (hi - lo)) - 1.0, dtype=torch.float32)
    y = torch.as_tensor(data.free[train], dtype=torch.float32)
    net = torch.nn.Sequential(torch.nn.Linear(len(lo), HIDDEN), torch.nn.Tanh(), torch.nn.Linear(HIDDEN, HIDDEN),
                              torch.nn.Tanh(), torch.nn.Linear(HIDDEN, 1))
    with torch.no_grad():
        for layer in net:
            if isinstance(layer, torch.nn.Linear):
                bound = 1.0 / math.sqrt(layer.in_features)
                layer.weight.uniform_(-bound, bound, generator=generator)
                layer.bias.uniform_(-bound, bound, generator=generator)
    opt = torch.optim.Adam(net.parameters(), lr=settings.learning_rate)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, settings.steps)
    loss_fn = torch.nn.BCEWithLogitsLoss()
    loss = torch.zeros(())
    for _ in range(settings.steps):
        idx = torch.randint(0, len(x), (min(settings.batch, len(x)),), generator=generator)
        loss = loss_fn(net(x[idx])[:, 0], y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
    weights = tuple(p.detach().to(torch.float64).numpy().copy() for p in net.parameters())
    model = CSpaceModel(spec, lo, hi, weights, task.kind.value, task.name)
    part = lambda idx: CSpaceData(data.q[idx], data.free[idx], data.penetration[idx])  # noqa: E731
    report = TrainReport(accuracy(model, part(train)), accuracy(model, part(test)), len(train), len(test),
                         float(np.mean(data.free)), float(loss.detach()))
    return model, report


def save_cspace(model: CSpaceModel, path):
    """Write ``model`` as safetensors, atomically (:func:`contactkit.assembly.cspace_checkpoint.save_cspace`)."""
    from contactkit.assembly.cspace_checkpoint import save_cspace as _save

    return _save(model, path)


def load_cspace(path, task: AssemblyTask | None = None) -> CSpaceModel:
    """Read a model file, refusing bad or foreign ones (:func:`contactkit.assembly.cspace_checkpoint.load_cspace`)."""
    from contactkit.assembly.cspace_checkpoint import load_cspace as _load

    return _load(path, task)
