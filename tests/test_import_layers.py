"""The layers of docs/architecture.md hold: import-linter's contract in pyproject.toml, and no package cycle."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import contactkit

tomllib = pytest.importorskip("tomllib")  # Python >= 3.11

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = Path(contactkit.__file__).resolve().parent
TOP_LEVEL_ONLY = {"__init__", "__main__"}


def _contract_layers() -> list[str]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    (contract,) = [c for c in config["contracts"] if c["id"] == "layers"]
    return [name.strip() for layer in contract["layers"] for name in layer.replace(":", "|").split("|")]


def _children() -> set[str]:
    names = {p.stem for p in PACKAGE.glob("*.py")} | {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists()}
    return names - TOP_LEVEL_ONLY


def test_every_package_and_module_has_a_layer():
    """A new package cannot escape the contract: every child of contactkit is placed in a layer."""
    missing = sorted(_children() - set(_contract_layers()))
    assert not missing, f"add {missing} to the layers contract in pyproject.toml and to docs/architecture.md"


def test_import_linter_contracts_pass():
    lint = Path(sys.executable).with_name("lint-imports")
    proc = subprocess.run([str(lint), "--no-cache", str(ROOT / "pyproject.toml")], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]


def _imported_children(path: Path) -> set[str]:
    """Children of contactkit that ``path`` imports at run time (``if TYPE_CHECKING:`` blocks excluded)."""
    tree = ast.parse(path.read_text())
    skip = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
            for body in node.body for n in ast.walk(body)}
    found = set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        names = [node.module] if isinstance(node, ast.ImportFrom) and node.module else []
        names += [a.name for a in node.names] if isinstance(node, ast.Import) else []
        found |= {n.split(".")[1] for n in names if n.startswith("contactkit.")}
    return found


def test_no_cycle_between_packages():
    """Independent of import-linter: the graph of children of contactkit is acyclic."""
    graph: dict[str, set[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        owner = path.relative_to(PACKAGE).parts[0].removesuffix(".py")
        graph.setdefault(owner, set()).update(_imported_children(path) - {owner})
    state: dict[str, int] = {}

    def visit(node: str, trail: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            assert state.get(nxt) != 1, f"package cycle: {' -> '.join([*trail, node, nxt])}"
            if nxt not in state:
                visit(nxt, [*trail, node])
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [])
