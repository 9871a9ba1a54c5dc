"""Multi-point pushing with a redundant arm (the hybrid-contact residual-RL pushing paper): the arm, pusher and
objects as a scene, the hybrid MLCP contact dynamics with box friction that the policy trains in, and the
"real" MuJoCo world it is deployed in.

Layer: beside :mod:`contactkit.tasks` (above the engine, MuJoCo and control layers, below data).
"""
