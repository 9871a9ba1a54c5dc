"""Exceptions raised by contactkit. Every message names the object and what is wrong with it."""

from __future__ import annotations


class ContactkitError(Exception):
    """Base class of every error contactkit raises on purpose."""


class InvalidInputError(ContactkitError, ValueError):
    """An argument has a wrong shape, a non-finite value, or a value out of its valid range."""


class GeometryError(ContactkitError, ValueError):
    """A mesh or part is malformed: non-finite vertices, degenerate, not watertight, not convex."""


class DatasetError(ContactkitError, OSError):
    """A dataset file is missing, truncated, foreign, or inconsistent with what is asked of it."""


class CheckpointError(ContactkitError, OSError):
    """A checkpoint is corrupt, foreign, or does not match the model it is loaded into."""


class ResultStoreError(ContactkitError):
    """A measurement's result cannot be stored in docs/results: no source checkout to store it in, unknown
    provenance (command, versions), or a checkpoint it used that is not committed in the repository."""


class SimulationDiverged(ContactkitError, RuntimeError):
    """A simulated world's step produced a state that cannot be trusted (non-finite or huge values, MuJoCo's
    bad-acceleration reset, a contact or constraint overflow, a tool through a wall); the world is left as it was
    at the start of that step."""


class ToolTunnelled(SimulationDiverged):
    """The tool passed through (or past the middle of) a static body: the step is physically meaningless."""


class WorkerLost(ContactkitError, RuntimeError):
    """A parallel job's worker died beyond the scheduler's retries (killed, out of memory, its machine lost): the jobs
    before it in order were delivered (a collection keeps those episodes and resumes after them); this job was not."""
