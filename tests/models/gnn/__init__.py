"""Tests of contactkit.models.gnn (Act-FIGNet, FIGNet+)."""
