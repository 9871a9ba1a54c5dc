"""Benchmarks, experiments, metrics and the results registry."""
