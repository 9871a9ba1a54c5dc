"""Task scenes and (later) gymnasium environments."""

from contactkit.tasks.scenes import TRAINING_SHAPES, make_tool, peg_in_hole, random_training_scene, table

__all__ = ["TRAINING_SHAPES", "make_tool", "peg_in_hole", "random_training_scene", "table"]
