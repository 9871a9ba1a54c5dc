"""contactkit: contact models, F/T sensing, estimation and control for contact-rich manipulation.

The most used pieces are re-exported here; subpackages hold the rest (geometry, collision, mujoco,
engine, models, estimation, control, tasks, data, eval, report).
"""

from contactkit.errors import CheckpointError, ContactkitError, DatasetError, GeometryError, InvalidInputError
from contactkit.model import ActionMode, ContactModel, rollout
from contactkit.physics import WorldParams, load_world
from contactkit.scene import ImpedanceGains, Scene, StaticBody, Tool
from contactkit.state import BodyState, stack_states

__version__ = "0.1.0"

__all__ = [
    "ActionMode", "BodyState", "CheckpointError", "ContactModel", "ContactkitError", "DatasetError", "GeometryError",
    "ImpedanceGains", "InvalidInputError", "Scene", "StaticBody", "Tool", "WorldParams", "load_world", "rollout",
    "stack_states",
]
