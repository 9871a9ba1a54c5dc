"""Tests of contactkit.engine (contact problem, solvers, integrators)."""
