"""Every stored result in docs/results can be reproduced from a clean checkout: it names the contactkit command that
made it and every package version, and every checkpoint it used is committed under models/ with the recorded
sha256 (contactkit.eval.store)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from contactkit.eval.store import default_results_dir, sha256_of, source_root

ROOT = source_root()
STORED = sorted(default_results_dir().glob("*.json"))


def _relative(path: str) -> str:
    file = Path(path)
    return (file.resolve().relative_to(ROOT) if file.is_absolute() else file).as_posix()


@pytest.mark.parametrize("path", STORED, ids=[p.stem for p in STORED])
def test_stored_result_has_its_command_and_versions(path):
    data = json.loads(path.read_text())
    provenance = data["provenance"]
    assert provenance["command"].startswith("contactkit ") and not provenance["quick"], provenance["command"]
    assert not data.get("partial", False)
    unknown = sorted(name for name, version in provenance["versions"].items() if version is None)
    assert not unknown, f"{path.name}: versions of {unknown} unknown"


@pytest.mark.parametrize("path", STORED, ids=[p.stem for p in STORED])
def test_every_checkpoint_of_a_stored_result_is_committed_with_its_sha256(path):
    data = json.loads(path.read_text())
    records = {c["path"]: c for c in data["provenance"].get("checkpoints", [])}
    named = {_relative(p) for p in [data.get("checkpoint"), *(data.get("checkpoints") or [])] if p is not None}
    assert named <= set(records), f"{path.name} used {sorted(named - set(records))} without recording them"
    for rel, record in records.items():
        file = ROOT / rel
        assert rel.startswith("models/") and file.is_file(), f"{path.name}: checkpoint {rel} is not in models/"
        assert sha256_of(file) == record["sha256"] and file.stat().st_size == record["bytes"], rel
        assert (file.parent / "README.md").is_file(), f"{rel} has no model card"


@pytest.mark.parametrize("path", STORED, ids=[p.stem for p in STORED])
def test_stored_command_holds_no_machine_path(path):
    import shlex

    provenance = json.loads(path.read_text())["provenance"]
    words = [*shlex.split(provenance["command"]), *(provenance.get("argv") or [])]
    assert not [w for w in words if w.startswith("/")], f"{path.name}: {provenance['command']}"
