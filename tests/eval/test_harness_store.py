"""What the harness stores in docs/results and what it refuses: only unrestricted full runs of a contactkit
command, with full provenance, and only with committed checkpoints (contactkit.eval.store)."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import tempfile
import types
from importlib import metadata
from pathlib import Path

import pytest

import contactkit
from contactkit.errors import ResultStoreError
from contactkit.eval import exp_mpc_insertion, exp_pf_tracking, harness, store
from contactkit.eval.results import default_results_page, render_results

NAME = "fake-store"
ARGV = ["/venv/bin/contactkit", "experiment", NAME, "--plots", "a folder"]
"""A ``sys.argv`` with an argument that needs quoting on a command line."""


class _Fake:
    """A measurement module: ``run`` counts its calls and returns the checkpoint it was given (or ``named``)."""

    def __init__(self, named: str | None = None, own_narrowing=None):
        self.calls = 0
        self.module = types.ModuleType("_ck_test_store")

        def run(quick: bool, seed: int, device: str, checkpoint=None, level: int = 3, plots=None) -> dict:
            self.calls += 1
            return {"value": level, "checkpoint": checkpoint if named is None else named}

        self.module.run = run
        if own_narrowing is not None:
            self.module.narrowing = own_narrowing


@pytest.fixture
def register(monkeypatch, tmp_path):
    """Register a fake experiment and keep refused results in a private temporary folder."""
    monkeypatch.setattr(tempfile, "gettempdir", lambda: str(tmp_path / "tmp"))

    def make(**kwargs) -> _Fake:
        fake = _Fake(**kwargs)
        monkeypatch.setitem(sys.modules, "_ck_test_store", fake.module)
        monkeypatch.setitem(harness.EXPERIMENTS, NAME, "_ck_test_store")
        return fake

    return make


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=test", "-c", "user.email=test@example.org", *args], cwd=repo,
                   check=True, capture_output=True)


@pytest.fixture
def repo(tmp_path) -> Path:
    """A git repository with a committed checkpoint ``models/m/best.safetensors`` and a docs/results folder."""
    root = tmp_path / "repo"
    (root / "models" / "m").mkdir(parents=True)
    (root / "models" / "m" / "best.safetensors").write_bytes(b"weights v1")
    _git(root, "init", "-q")
    _git(root, "add", "models")
    _git(root, "commit", "-q", "-m", "checkpoint")
    return root


def _run(tmp_path, results: Path, json_path=None, argv=ARGV, **options) -> dict:
    return harness.run_measurement("experiment", NAME, quick=False, results_dir=results, argv=argv,
                                   json_path=None if json_path is None else str(json_path), options=options)


def test_stored_result_records_the_exact_command_and_every_version(register, tmp_path):
    register()
    out = _run(tmp_path, tmp_path / "results")
    stored = json.loads((tmp_path / "results" / f"{NAME}.json").read_text())["provenance"]
    assert out["stored"] == str(tmp_path / "results" / f"{NAME}.json")
    assert stored["argv"] == ["contactkit", *ARGV[1:]]  # the program by name, not the machine's path to it
    assert stored["command"] == f"contactkit experiment {NAME} --plots 'a folder'"
    assert set(stored["versions"]) == {"contactkit", *harness.PACKAGES} and None not in stored["versions"].values()
    assert stored["versions"]["contactkit"] == contactkit.__version__
    assert stored["checkpoints"] == [] and stored["not_stored"] is None


def test_a_run_without_its_command_is_refused_before_it_starts(register, tmp_path):
    fake = register()
    with pytest.raises(ResultStoreError, match="contactkit command"):
        _run(tmp_path, tmp_path / "results", argv=None)
    assert fake.calls == 0 and not (tmp_path / "results").exists()
    harness.run_measurement("experiment", NAME, quick=True, results_dir=tmp_path / "results")  # not stored: fine
    assert fake.calls == 1


def test_versions_fall_back_to_the_module_and_an_unknown_one_refuses_the_store(register, tmp_path, monkeypatch):
    register()
    real = metadata.version

    def version(name):
        if name in ("contactkit", "trimesh"):
            raise metadata.PackageNotFoundError(name)
        return real(name)

    monkeypatch.setattr(metadata, "version", version)
    monkeypatch.setitem(sys.modules, "trimesh", None)  # not importable either
    found = harness.versions()
    assert found["contactkit"] == contactkit.__version__ and found["trimesh"] is None
    with pytest.raises(ResultStoreError, match="trimesh"):
        _run(tmp_path, tmp_path / "results")
    assert not (tmp_path / "results").exists()


def test_an_option_off_its_default_narrows_the_run_and_a_checkpoint_does_not(register, tmp_path):
    register()
    _run(tmp_path, tmp_path / "results", level=3)  # the default value given explicitly: a full run
    assert (tmp_path / "results" / f"{NAME}.json").exists()
    out = _run(tmp_path, tmp_path / "narrow", level=2)
    assert out["provenance"]["not_stored"] == ["--level 2"] and "stored" not in out
    assert not (tmp_path / "narrow").exists()
    assert store.narrowing(sys.modules["_ck_test_store"], {"checkpoint": "x.safetensors"}) == []


def test_a_modules_own_narrowing_decides(register, tmp_path):
    register(own_narrowing=lambda options: ["always"])
    out = _run(tmp_path, tmp_path / "results")
    assert out["provenance"]["not_stored"] == ["always"] and not (tmp_path / "results").exists()


def test_workers_never_narrow_an_experiment_but_narrow_the_replan_timing_benchmark():
    """Where jobs run does not change an experiment's result (stored either way); it changes replan times."""
    from contactkit.eval import bench_replan, bench_scale, exp_pushing

    assert store.narrowing(exp_pushing, {"workers": 2, "ray_address": "auto"}) == []
    assert store.narrowing(bench_replan, {"workers": 2}) == ["--workers 2"]
    assert store.narrowing(bench_replan, {"ray_address": "auto"}) == ["--ray-address auto"]
    assert store.narrowing(bench_replan, {}) == []
    assert store.narrowing(bench_scale, {"workers": 2}) == []  # the measured default
    assert store.narrowing(bench_scale, {"workers": 3}) == ["--workers 3"]


@pytest.mark.parametrize("module", [exp_mpc_insertion, exp_pf_tracking])
def test_planning_models_narrow_only_when_they_leave_out_a_model_the_run_would_use(module):
    every_model = tuple(exp_mpc_insertion.MODEL_FACTORIES)
    without_checkpoint = tuple(m for m in every_model if m not in exp_mpc_insertion.CHECKPOINT_MODELS)
    assert module.narrowing({"models": without_checkpoint}) == []  # what a clean checkout runs by default
    assert module.narrowing({"models": every_model, "checkpoint": "c.safetensors"}) == []
    assert module.narrowing({"models": without_checkpoint, "checkpoint": "c.safetensors"}) == [
        "--models leaves out ['act-fignet']"]
    assert module.narrowing({"models": ("ground-truth",)}) == ["--models leaves out ['engine']"]
    assert exp_mpc_insertion.narrowing({"episodes": 2}) == ["--episodes 2"]


def test_a_committed_checkpoint_is_stored_with_its_sha256(register, repo, tmp_path, monkeypatch):
    register()
    monkeypatch.chdir(repo)
    out = _run(tmp_path, repo / "docs" / "results", checkpoint="models/m/best.safetensors")
    record = json.loads(Path(out["stored"]).read_text())["provenance"]["checkpoints"]
    assert record == [{"path": "models/m/best.safetensors", "sha256": hashlib.sha256(b"weights v1").hexdigest(),
                       "bytes": len(b"weights v1")}]
    assert "models/m/best.safetensors" in render_results(repo / "docs" / "results")


@pytest.mark.parametrize("case, message", [("outside", "outside the repository"), ("untracked", "not committed"),
                                           ("modified", "differs from its committed version")])
def test_an_uncommitted_checkpoint_is_refused_before_the_run(register, repo, tmp_path, case, message):
    fake = register()
    path = {"outside": tmp_path / "elsewhere.safetensors", "untracked": repo / "models" / "m" / "new.safetensors",
            "modified": repo / "models" / "m" / "best.safetensors"}[case]
    path.write_bytes(b"weights v2")
    with pytest.raises(ResultStoreError, match=message):
        _run(tmp_path, repo / "docs" / "results", checkpoint=str(path))
    assert fake.calls == 0 and not (repo / "docs" / "results" / f"{NAME}.json").exists()


def test_a_checkpoint_named_by_the_result_is_checked_after_the_run_and_the_result_kept(register, repo, tmp_path):
    outside = tmp_path / "found-by-default.safetensors"
    outside.write_bytes(b"weights")
    register(named=str(outside))
    with pytest.raises(ResultStoreError, match="outside the repository") as caught:
        _run(tmp_path, repo / "docs" / "results")
    kept = tmp_path / "tmp" / f"contactkit-unstored-{NAME}.json"
    assert str(kept) in str(caught.value) and json.loads(kept.read_text())["checkpoint"] == str(outside)
    assert not (repo / "docs" / "results" / f"{NAME}.json").exists()
    out = _run(tmp_path, repo / "docs" / "results", json_path=tmp_path / "out.json")  # --json: written there only
    assert json.loads((tmp_path / "out.json").read_text())["provenance"]["checkpoints"][0]["sha256"] == (
        hashlib.sha256(b"weights").hexdigest()) and "stored" not in out


def test_a_checkpoint_needs_the_results_folder_in_a_git_work_tree(register, tmp_path):
    register()
    (tmp_path / "c.safetensors").write_bytes(b"w")
    with pytest.raises(ResultStoreError, match="not inside a git work tree"):
        _run(tmp_path, tmp_path / "results", checkpoint=str(tmp_path / "c.safetensors"))


def test_results_are_found_from_the_source_checkout_not_the_working_directory(register, tmp_path, monkeypatch):
    root = Path(contactkit.__file__).resolve().parents[2]
    assert store.default_results_dir() == root / "docs" / "results" and default_results_page() == root / "docs" / (
        "RESULTS.md")
    monkeypatch.setattr(contactkit, "__file__", str(tmp_path / "site-packages" / "contactkit" / "__init__.py"))
    with pytest.raises(ResultStoreError, match="--results-dir"):
        store.default_results_dir()
    fake = register()
    with pytest.raises(ResultStoreError, match="--results-dir"):
        harness.run_measurement("experiment", NAME, quick=False, argv=ARGV)
    assert fake.calls == 0
    harness.run_measurement("experiment", NAME, quick=True, argv=ARGV)  # nothing to store: no folder needed


def test_the_cli_records_its_argv_and_its_json_run_writes_only_that_file(register, tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from contactkit.cli import app

    register()
    results = tmp_path / "results"
    full = ["contactkit", "experiment", NAME, "--results-dir", str(results)]
    with_json = ["contactkit", "experiment", NAME, "--results-dir", str(results / "j"), "--json",
                 str(tmp_path / "o.json")]
    for argv in (full, with_json):
        monkeypatch.setattr(sys, "argv", argv)
        done = CliRunner().invoke(app, argv[1:])
        assert done.exit_code == 0, done.output
    outside = harness.OUTSIDE_REPOSITORY  # the temporary folders are not in the checkout: only their names are kept
    stored = json.loads((results / f"{NAME}.json").read_text())["provenance"]["argv"]
    assert stored == [*full[:-1], f"{outside}/results"]
    assert json.loads((tmp_path / "o.json").read_text())["provenance"]["argv"] == [
        *full[:3], "--results-dir", f"{outside}/j", "--json", f"{outside}/o.json"]
    assert not (results / "j").exists() and "not stored in docs/results (--json)" in done.output


def test_provenance_describes_the_tree_before_the_run_writes_into_it(register, tmp_path, monkeypatch):
    """A run that writes its figures into the checkout (``--plots docs/figures/...``) leaves the tree dirty; the
    recorded git state is the one the run started from."""
    fake = register()
    monkeypatch.setattr(harness, "git_state", lambda root: {"commit": "abc", "dirty": fake.calls > 0})
    _run(tmp_path, tmp_path / "results")
    stored = json.loads((tmp_path / "results" / f"{NAME}.json").read_text())["provenance"]
    assert fake.calls == 1 and stored["git"] == {"commit": "abc", "dirty": False}


def test_recorded_command_lines_hold_no_machine_path():
    root = store.source_root()
    argv = [str(root / ".venv/bin/contactkit"), "experiment", NAME, "--plots", str(root / "docs/figures/x"),
            "--json", "/somewhere/else/out.json", "--seed", "3"]
    assert harness.portable_argv(argv, root) == ["contactkit", "experiment", NAME, "--plots", "docs/figures/x",
                                                 "--json", f"{harness.OUTSIDE_REPOSITORY}/out.json", "--seed", "3"]
    assert harness.portable_argv(argv, None)[4] == f"{harness.OUTSIDE_REPOSITORY}/x"
