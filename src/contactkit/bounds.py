"""Physical bounds shared by the scene and the world parameters: a value beyond them is not a real tool or cell
but a typo or a unit mistake, refused with the reason (named constants, each with its physical source)."""

from __future__ import annotations

MIN_TOOL_MASS_KG = 1e-6
"""Lightest tool [kg] (1 mg, lighter than any tool a robot holds; MuJoCo refuses a body below 1e-15 kg)."""
MAX_TOOL_MASS_KG = 1e4
"""Heaviest tool [kg]: beyond the payload of the largest industrial arms (2.3 t)."""
TOOL_MASS_REASON = "from a milligram to beyond the payload of the largest industrial arms"
MAX_TOOL_INERTIA_KGM2 = 1e4
"""Largest principal moment of a tool's inertia [kg·m²]: :data:`MAX_TOOL_MASS_KG` at 1 m from its centre of mass."""
MAX_TCP_OFFSET_M = 2.0
"""Farthest tool centre point from the tool frame origin [m]: longer than any tool a robot's flange holds (the
longest industrial arms reach about 4 m in all)."""
