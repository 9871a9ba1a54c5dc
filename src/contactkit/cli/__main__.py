"""``python -m contactkit.cli``: the ``contactkit`` command."""

from contactkit.cli import app

app(prog_name="contactkit")
