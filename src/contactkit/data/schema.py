"""Trajectory dataset schema: the ``Episode`` and ``DatasetMeta`` records and the on-disk layout names.

Convention (see ``docs/dataset.md``): an episode of ``T`` control steps stores ``T + 1`` states
``s_0 .. s_T`` and ``T`` actions, commands and F/T readings. State ``s_t`` is the state *before* the
action of step ``t`` is applied; ``action[t]`` and ``wrench[t]`` belong to the step from ``s_t`` to
``s_{t+1}``. Frames and units follow docs/architecture.md: world frame with z up, SI units, quaternions
``(w, x, y, z)``.
"""

from __future__ import annotations

import dataclasses
import datetime
import importlib.metadata
import json
import math
from dataclasses import dataclass, field

import numpy as np

from contactkit.data.json_diff import DIFF_MAX_ENTRIES, json_diff
from contactkit.errors import DatasetError, InvalidInputError
from contactkit.model import ActionMode
from contactkit.state import QUAT_NORM_TOL, BodyState

FORMAT_NAME = "contactkit.trajectories"
"""Value of the root attribute ``format`` that marks a contactkit trajectory dataset."""

SCHEMA_VERSION = 1
"""Layout version written to, and required from, the root attribute ``schema_version``."""

STATE_FIELDS: dict[str, tuple[int, ...]] = {
    "time": (),
    "pos": (3,),
    "quat": (4,),
    "lin_vel": (3,),
    "ang_vel": (3,),
}
"""Per-state fields (``T + 1`` rows per episode, group ``states/``) and their trailing shapes."""

STEP_FIELDS: dict[str, tuple[int, ...]] = {"action": (6,), "command": (6,), "wrench": (6,)}
"""Per-step fields (``T`` rows per episode, group ``steps/``) and their trailing shapes."""

INDEX_FIELDS: tuple[str, ...] = ("state_start", "step_start", "seed", "scene_start", "scene_length", "length")
"""Episode index datasets (group ``episodes/``), in write order: ``length`` is extended last and is the
commit point — the number of committed episodes is ``len(episodes/length)``."""

SCENE_INDEX_FIELDS: tuple[str, ...] = ("scene_start", "scene_length")
"""Index fields of the per-episode scenes; files written before per-episode scenes lack them (and
:data:`SCENE_BYTES`) and are read as if every episode used the file's ``meta.scene``."""

SCENE_BYTES = "scenes/bytes"
"""uint8 dataset holding the UTF-8 text of the per-episode scenes, concatenated."""

SOURCE_BYTES = "sources/bytes"
"""uint8 dataset holding, concatenated, the UTF-8 JSON provenance of each episode imported from a file (robot logs:
``{"file", "sha256", "stamp", "start_ns", "format"}``); optional (files without it, and collected episodes, have
none)."""

SOURCE_INDEX_FIELDS: tuple[str, ...] = ("source_start", "source_length")
"""Index fields (group ``episodes/``) of the per-episode provenance: ``(-1, 0)`` for an episode without one; extended
before ``episodes/length``, so a committed episode always has its entry."""

NO_SEED = -1
"""Value of ``episodes/seed`` for an episode stored without a seed."""

NO_SCENE_START = -1
"""Value of ``episodes/scene_start`` (with ``scene_length`` 0) for an episode that uses ``meta.scene``."""

META_KEYS_MUST_MATCH: tuple[str, ...] = ("scene", "world", "policy", "seed", "action_mode", "control_dt",
                                         "backend")
"""Meta keys that must be equal for a writer to append to an existing file."""

_JSON_KEYS = ("scene", "world", "policy")


def _package_version() -> str:
    try:
        return importlib.metadata.version("contactkit")
    except importlib.metadata.PackageNotFoundError:
        return "0+unknown"


def _now_iso() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def _json_text(name: str, value) -> str:
    """A JSON object given as text or as a dict, returned as text (dicts are dumped with sorted keys)."""
    if isinstance(value, dict):
        return json.dumps(value, sort_keys=True)
    if not isinstance(value, str):
        raise InvalidInputError(f"meta.{name} must be a JSON object string or a dict, "
                                f"got {type(value).__name__}")
    return value


@dataclass(frozen=True)
class DatasetMeta:
    """Per-file attributes of a dataset (static description of how the episodes were made).

    Attributes:
        scene: JSON object text describing the scene (``Scene.to_json()``; ``"{}"`` when unknown).
        world: JSON object text of the physics parameters (``WorldParams.to_json()``; ``"{}"`` if unknown).
        policy: JSON object text with at least ``"name"`` and the policy parameters.
        seed: base seed of the collection (int ≥ 0).
        action_mode: what ``command`` means (:class:`~contactkit.control.impedance.ActionMode`).
        control_dt: control period [s], > 0.
        backend: what produced the data (e.g. ``"mujoco"``, ``"engine"``, ``"robot-log"``).
        created: ISO 8601 creation time (UTC).
        contactkit_version: version of the package that created the file.
        schema_version: layout version, :data:`SCHEMA_VERSION`.
    """

    scene: str
    world: str
    policy: str
    seed: int
    action_mode: ActionMode
    control_dt: float
    backend: str
    created: str = field(default_factory=_now_iso)
    contactkit_version: str = field(default_factory=_package_version)
    schema_version: int = SCHEMA_VERSION

    def __post_init__(self):
        for key in _JSON_KEYS:
            text = _json_text(key, getattr(self, key))
            try:
                parsed = json.loads(text)
            except json.JSONDecodeError as exc:
                raise InvalidInputError(f"meta.{key} is not valid JSON: {exc}") from None
            if not isinstance(parsed, dict):
                raise InvalidInputError(f"meta.{key} must be a JSON object, got {type(parsed).__name__}")
            object.__setattr__(self, key, text)
        if not isinstance(json.loads(self.policy).get("name"), str):
            raise InvalidInputError("meta.policy must have a string 'name'")
        if isinstance(self.seed, bool) or not isinstance(self.seed, (int, np.integer)) or self.seed < 0:
            raise InvalidInputError(f"meta.seed must be an int >= 0, got {self.seed!r}")
        object.__setattr__(self, "seed", int(self.seed))
        try:
            object.__setattr__(self, "action_mode", ActionMode(self.action_mode))
        except ValueError:
            raise InvalidInputError(f"meta.action_mode {self.action_mode!r} is not one of "
                                    f"{[m.value for m in ActionMode]}") from None
        dt = self.control_dt
        is_number = isinstance(dt, (int, float, np.floating)) and not isinstance(dt, bool)
        if not is_number or not math.isfinite(dt) or dt <= 0:
            raise InvalidInputError(f"meta.control_dt must be a finite number > 0 [s], got {dt!r}")
        object.__setattr__(self, "control_dt", float(dt))
        for key in ("backend", "created", "contactkit_version"):
            if not isinstance(getattr(self, key), str):
                raise InvalidInputError(f"meta.{key} must be a string, got {getattr(self, key)!r}")

    def to_dict(self) -> dict:
        """Plain dictionary of the attributes (``action_mode`` as its string value)."""
        d = dataclasses.asdict(self)
        d["action_mode"] = self.action_mode.value
        return d

    @staticmethod
    def from_dict(d: dict) -> DatasetMeta:
        """Inverse of :meth:`to_dict`; a missing or unknown key is an InvalidInputError naming it."""
        names = {f.name for f in dataclasses.fields(DatasetMeta)}
        unknown = sorted(set(d) - names)
        missing = sorted(names - set(d))
        if unknown or missing:
            raise InvalidInputError(f"meta keys: missing {missing}, unknown {unknown}")
        return DatasetMeta(**d)

    def to_json(self) -> str:
        """JSON text of :meth:`to_dict`."""
        return json.dumps(self.to_dict(), sort_keys=True)

    @staticmethod
    def from_json(text: str) -> DatasetMeta:
        """Inverse of :meth:`to_json`."""
        try:
            d = json.loads(text)
        except (json.JSONDecodeError, RecursionError) as exc:
            raise InvalidInputError(f"meta JSON is malformed: {exc}") from None
        if not isinstance(d, dict):
            raise InvalidInputError("meta JSON must be an object")
        return DatasetMeta.from_dict(d)

    def mismatched_keys(self, other: DatasetMeta) -> list[str]:
        """Keys of :data:`META_KEYS_MUST_MATCH` whose values differ (JSON fields compared parsed)."""
        out = []
        for key in META_KEYS_MUST_MATCH:
            a, b = getattr(self, key), getattr(other, key)
            if key in _JSON_KEYS:
                a, b = json.loads(a), json.loads(b)
            if a != b:
                out.append(key)
        return out

    def differences(self, other: DatasetMeta) -> str:
        """One line naming what differs on :data:`META_KEYS_MUST_MATCH` from ``self`` (old) to ``other`` (new):
        the plain keys first, then dotted paths into the JSON fields (``scene.statics[1].friction: 0.5 → 0.6``;
        a numeric array is one entry counting its differing values, see :func:`~contactkit.data.json_diff.json_diff`),
        at most :data:`~contactkit.data.json_diff.DIFF_MAX_ENTRIES` paths, then a count of the others."""
        entries: list[str] = []
        for key in sorted(META_KEYS_MUST_MATCH, key=lambda k: k in _JSON_KEYS):
            a, b = getattr(self, key), getattr(other, key)
            if key in _JSON_KEYS:
                a, b = json.loads(a), json.loads(b)
            else:  # the action mode as its name
                a, b = getattr(a, "value", a), getattr(b, "value", b)
            entries += json_diff(key, a, b)
        shown = entries[:DIFF_MAX_ENTRIES]
        more = len(entries) - len(shown)
        return "; ".join(shown) + (f"; and {more} more" if more else "")


def validate_scene_json(name: str, scene) -> str | None:
    """Check a per-episode scene: None, or the text of a JSON object that encodes to UTF-8.

    Args:
        name: what to call the value in error messages (e.g. ``"episode 3"``).
        scene: None or ``str`` (``Scene.to_json()``).

    Returns:
        ``scene`` unchanged (a plain ``str``), or None.

    Raises:
        InvalidInputError: naming ``name.scene`` and the problem.
    """
    if scene is None:
        return None
    if not isinstance(scene, str):
        raise InvalidInputError(f"{name}.scene must be None or JSON object text (str), "
                                f"got {type(scene).__name__}")
    try:
        scene.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidInputError(f"{name}.scene cannot be encoded as UTF-8 ({exc.reason} at character "
                                f"{exc.start})") from None
    try:
        parsed = json.loads(scene)
    except json.JSONDecodeError as exc:
        raise InvalidInputError(f"{name}.scene is not valid JSON: {exc}") from None
    if not isinstance(parsed, dict):
        raise InvalidInputError(f"{name}.scene must be a JSON object, got {type(parsed).__name__}")
    return str(scene)


def check_scene_index(path: str, start: np.ndarray, length: np.ndarray, n_bytes: int) -> None:
    """Check the per-episode scene index ``(E,)`` int64 arrays against ``scenes/bytes`` of ``n_bytes`` bytes.

    Each episode has either ``(NO_SCENE_START, 0)`` or a block ``start ≥ 0, length ≥ 1``; blocks tile
    ``scenes/bytes`` in episode order, except that an episode may repeat the block of the previous
    episode that has a scene (a shared copy of an identical scene); no block reaches past ``n_bytes``.

    Raises:
        DatasetError: naming ``path``, the episode and the problem.
    """
    none = (start == NO_SCENE_START) & (length == 0)
    bad = ~(none | ((start >= 0) & (length > 0)))
    if bad.any():
        i = int(np.argmax(bad))
        raise DatasetError(f"{path}: episode {i} has an invalid scene index (scene_start {start[i]}, "
                           f"scene_length {length[i]})")
    ids = np.flatnonzero(length > 0)
    s, m = start[ids], length[ids]
    new = np.ones(ids.size, dtype=bool)
    new[1:] = (s[1:] != s[:-1]) | (m[1:] != m[:-1])
    ends = np.cumsum(m * new)
    before = np.concatenate([[0], ends[:-1]]).astype(np.int64)
    wrong = new & (s != before)
    if wrong.any():
        k = int(np.argmax(wrong))
        raise DatasetError(f"{path}: mismatched scene index: episode {ids[k]}'s scene starts at byte {s[k]} "
                           f"but the scenes before it end at byte {before[k]}")
    past = s + m > n_bytes
    if past.any():
        k = int(np.argmax(past))
        raise DatasetError(f"{path}: episode {ids[k]}'s scene points past the scene bytes: it needs bytes "
                           f"{s[k]}:{s[k] + m[k]} but {SCENE_BYTES} has {n_bytes}")


def _float_array(name: str, key: str, value) -> np.ndarray:
    try:
        return np.array(value, dtype=np.float64, copy=True, order="C")
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"{name}.{key} is not a numeric array: {exc}") from None


def _first_bad_row(mask: np.ndarray) -> int:
    """Index along axis 0 of the first row where ``mask`` (any trailing axis) is true."""
    rows = np.any(mask.reshape(mask.shape[0], -1), axis=1)
    return int(np.argmax(rows))


@dataclass(frozen=True, eq=False)
class Episode:
    """One episode of ``T`` control steps of the floating tool.

    Attributes:
        time: ``(T+1,)`` time of each state [s], strictly increasing.
        pos: ``(T+1, 3)`` tool origin position [m, world].
        quat: ``(T+1, 4)`` tool orientation ``(w, x, y, z)``, unit norm.
        lin_vel: ``(T+1, 3)`` linear velocity of the tool origin [m/s, world].
        ang_vel: ``(T+1, 3)`` angular velocity [rad/s, world].
        action: ``(T, 6)`` wrench applied by the controller during step t (world frame, about the tool
            origin, mean over the control period) [N, N·m].
        command: ``(T, 6)`` what the policy asked at step t: a pose-delta (position [m] + rotation
            vector [rad], world) or a wrench [N, N·m], per the file's ``action_mode``.
        wrench: ``(T, 6)`` F/T reading during step t (sensor frame, about the sensor origin) [N, N·m].
        seed: seed that generated the episode (int ≥ 0) or None.
        scene: JSON object text of the episode's own scene (``Scene.to_json()``), or None when the
            episode uses the file's ``meta.scene`` (collections that draw a new scene per episode).
    """

    time: np.ndarray
    pos: np.ndarray
    quat: np.ndarray
    lin_vel: np.ndarray
    ang_vel: np.ndarray
    action: np.ndarray
    command: np.ndarray
    wrench: np.ndarray
    seed: int | None = None
    scene: str | None = None

    @property
    def n_steps(self) -> int:
        """Number of control steps ``T``."""
        return int(np.shape(self.action)[0])

    def states(self) -> BodyState:
        """The ``T + 1`` states as a :class:`BodyState` with batch shape ``(T+1,)``."""
        return BodyState(self.pos, self.quat, self.lin_vel, self.ang_vel)

    @staticmethod
    def from_states(time, states: BodyState, action, command, wrench, seed: int | None = None,
                    scene: str | None = None) -> Episode:
        """Build from a :class:`BodyState` with time axis ``(T+1,)`` and the ``(T, 6)`` step arrays."""
        return Episode(time, states.pos, states.quat, states.lin_vel, states.ang_vel, action, command,
                       wrench, seed, scene)

    def arrays(self) -> dict[str, np.ndarray]:
        """All state and step fields by name (``STATE_FIELDS`` then ``STEP_FIELDS``)."""
        return {name: getattr(self, name) for name in (*STATE_FIELDS, *STEP_FIELDS)}

    def validated(self, name: str = "episode") -> Episode:
        """A float64, C-contiguous copy after checking shapes, finiteness, unit quaternions, time and scene.

        Raises:
            InvalidInputError: naming the field and the step index that is wrong, or the scene problem
                (not a str, not UTF-8 encodable, not a JSON object).
        """
        arrays = {key: _float_array(name, key, getattr(self, key)) for key in (*STATE_FIELDS, *STEP_FIELDS)}
        n_steps = arrays["action"].shape[0] if arrays["action"].ndim == 2 else 0
        if n_steps < 1:
            raise InvalidInputError(f"{name}.action must have shape (T, 6) with T >= 1, "
                                    f"got {arrays['action'].shape}")
        for key, trailing in {**STATE_FIELDS, **STEP_FIELDS}.items():
            expected = (n_steps + (key in STATE_FIELDS), *trailing)
            if arrays[key].shape != expected:
                raise InvalidInputError(f"{name}.{key} must have shape {expected} (T = {n_steps} steps), "
                                        f"got {arrays[key].shape}")
            bad = ~np.isfinite(arrays[key])
            if bad.any():
                raise InvalidInputError(f"{name}.{key} is NaN or Inf at step {_first_bad_row(bad)}")
        dev = np.abs(np.linalg.norm(arrays["quat"], axis=-1) - 1.0)
        if np.any(dev > QUAT_NORM_TOL):
            i = int(np.argmax(dev > QUAT_NORM_TOL))
            raise InvalidInputError(f"{name}.quat at step {i} is not unit norm (| |q| - 1 | = {dev[i]:.3g} > "
                                    f"QUAT_NORM_TOL = {QUAT_NORM_TOL:g})")
        dt = np.diff(arrays["time"])
        if np.any(dt <= 0.0):
            i = int(np.argmax(dt <= 0.0)) + 1
            raise InvalidInputError(f"{name}.time does not increase at step {i} "
                                    f"({arrays['time'][i - 1]!r} -> {arrays['time'][i]!r} s)")
        seed = self.seed
        if seed is not None:
            if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
                raise InvalidInputError(f"{name}.seed must be None or an int >= 0, got {seed!r}")
            seed = int(seed)
        return Episode(**arrays, seed=seed, scene=validate_scene_json(name, self.scene))
