"""Plots, the HTML report pages, rendered rollouts and the interactive 3-D page.

``plot_episode`` and the report pages load with the package; the renderer and the 3-D page import MuJoCo and are
loaded on first use (PEP 562), like ``contactkit.engine``'s heavy parts.
"""

from contactkit.report.html import render_page, write_page, write_report
from contactkit.report.plots import plot_episode
from contactkit.report.results_page import write_results_report

_LAZY = {
    "ContactProbe": "contactkit.report.render",
    "EpisodeRenderer": "contactkit.report.render",
    "RenderConfig": "contactkit.report.render",
    "RenderError": "contactkit.report.render",
    "episode_frames": "contactkit.report.render",
    "predicted_episode": "contactkit.report.render",
    "write_video": "contactkit.report.render",
    "viewer_html": "contactkit.report.viewer",
    "viewer_payload": "contactkit.report.viewer",
    "write_viewer": "contactkit.report.viewer",
}

__all__ = ["plot_episode", "render_page", "write_page", "write_report", "write_results_report", *_LAZY]


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'contactkit.report' has no attribute {name!r}")
