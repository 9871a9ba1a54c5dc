"""``python -m contactkit``: the ``contactkit`` command."""

from contactkit.cli import app

app(prog_name="contactkit")
