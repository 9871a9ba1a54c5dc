"""``contactkit assembly reference``: its sizes are metres, as collect's (issue 35 part 7)."""

from typer.testing import CliRunner

from contactkit.cli import app


def test_reference_takes_metres_and_names_a_millimetre_value(tmp_path):
    out = tmp_path / "r.h5"
    r = CliRunner().invoke(app, ["assembly", "reference", "--task", "bolting", "--diameter", "48", "--pitch", "5",
                                 "--steps", "1", "--out", str(out)])
    assert r.exit_code == 2 and len(r.output.strip().splitlines()) == 1, r.output
    assert r.output.startswith("error: thread diameter 48 m is outside ISO 261") and "give 0.048 [m]" in r.output
    assert not out.exists()


def test_reference_help_gives_the_sizes_in_metres():
    r = CliRunner().invoke(app, ["assembly", "reference", "--help"], env={"COLUMNS": "200"})
    assert r.exit_code == 0
    assert "ISO bolt diameter [m]" in r.output and "thread pitch [m]" in r.output and "[mm]" not in r.output


def test_reference_refuses_an_absurd_row_count_at_once(tmp_path):
    """1e11 rows hung (planning 5e8 episodes); now one line naming the bound."""
    out = tmp_path / "r.h5"
    r = CliRunner().invoke(app, ["assembly", "reference", "--steps", "100000000000", "--out", str(out)])
    assert r.exit_code == 2 and r.output.strip() == ("error: n_steps must be in [1, 10,000,000] rows of 10 ms, got "
                                                     "100000000000"), r.output
    assert not out.exists()
