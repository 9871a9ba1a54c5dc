"""Headless Chromium for the page tests: load a page, let a script measure it, read the measurement from the DOM;
and a small recorded dataset for the rendering and viewer tests."""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

CHROMIUM = next((p for p in (shutil.which("chromium"), shutil.which("chromium-browser"), "/usr/bin/chromium")
                 if p and Path(p).is_file()), None)
INSTALL = "headless Chromium is not installed: `sudo apt install chromium` (Debian/Ubuntu) to run the page tests"
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", "--allow-file-access-from-files")
WINDOW = (900, 700)
"""Browser window [px]: narrower than the page's 1000 px column, so the page has to wrap to fit."""
BUDGET_MS = 20000
"""Virtual time the page gets to load its (embedded) images and run its scripts."""
CHECK = """
<script>
window.addEventListener('load', () => {
  const vw = document.documentElement.clientWidth;
  const imgs = [...document.images].map(i => ({alt: i.alt, w: i.naturalWidth, ok: i.complete && i.naturalWidth > 0}));
  const wide = [...document.querySelectorAll('body *')].filter(e => e.getBoundingClientRect().right > vw + 1
      && !e.closest('details:not([open])')).map(e => e.tagName + '.' + e.className);
  const boxes = [...document.querySelectorAll('div.table')].filter(d => d.scrollWidth > d.clientWidth + 1).length;
  const extra = window.pageCheck ? window.pageCheck() : null;
  const out = document.createElement('pre');
  out.id = 'page-check';
  out.textContent = 'PAGE' + 'CHECK' + JSON.stringify({viewport: vw, scroll_width: document.documentElement.scrollWidth,
      images: imgs, overflowing: wide, scrolling_tables: boxes, extra: extra}) + 'PAGE' + 'CHECK';
  document.body.appendChild(out);
});
</script>
"""
"""Appended to the page under test: after every image has loaded (or failed), writes what it measured."""


def check_page(page: Path, tmp: Path) -> dict:
    """Load a copy of ``page`` (with :data:`CHECK` appended) in headless Chromium and return the measurement:
    ``viewport``, ``scroll_width`` [px], ``images`` (alt, naturalWidth, ok), ``overflowing`` elements (right edge
    beyond the viewport), ``scrolling_tables`` (table boxes wider than the page) and ``extra`` (the page's own
    ``window.pageCheck()``, if it defines one)."""
    if CHROMIUM is None:
        pytest.skip(INSTALL)
    copy = page.parent / f"checked-{page.name}"
    copy.write_text(page.read_text(encoding="utf-8").replace("</body>", CHECK + "</body>"), encoding="utf-8")
    profile = tmp / "chromium-profile"
    profile.mkdir(exist_ok=True)
    run = subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={profile}", f"--window-size={WINDOW[0]},{WINDOW[1]}",
                          f"--virtual-time-budget={BUDGET_MS}", "--dump-dom", copy.resolve().as_uri()],
                         capture_output=True, text=True, timeout=120)
    found = re.search(r"PAGECHECK(.*?)PAGECHECK", run.stdout, re.DOTALL)
    assert found, f"the page check did not run (chromium exit {run.returncode}): {run.stderr[-2000:]}"
    return json.loads(html.unescape(found.group(1)))


@pytest.fixture
def chromium_check(tmp_path):
    """:func:`check_page` with a fresh browser profile under the test's temporary folder."""
    return lambda page: check_page(Path(page), tmp_path)


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    """A recorded touch dataset of one 12-step episode (seed 3): ``(path, episode 0, its scene)``."""
    from contactkit.data.collect import CollectSpec, collect
    from contactkit.data.reader import open_dataset
    from contactkit.scene import Scene

    path = tmp_path_factory.mktemp("touch") / "touch.h5"
    collect(CollectSpec(episodes=1, steps=12, seed=3), str(path))
    with open_dataset(path) as ds:
        return path, ds.episode(0), Scene.from_json(ds.scene_json(0))
