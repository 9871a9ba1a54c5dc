"""Plots and the HTML report."""

from contactkit.report.html import write_report
from contactkit.report.plots import plot_episode

__all__ = ["plot_episode", "write_report"]
