"""The graph network is hand-written torch: nothing in contactkit imports torch-geometric (issue 15 item 8).

``benchmarks/gnn_pyg_vs_scatter.py`` measured a PyG port of a processor step against ours and the
dependency was dropped; an import of it would fail on a clean install.
"""

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[3] / "src" / "contactkit"
DROPPED = ("torch_geometric", "torch_scatter", "torch_sparse", "pyg_lib")


def imported_roots(path: Path) -> set[str]:
    roots = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            roots |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            roots.add(node.module.split(".")[0])
    return roots


def test_no_module_imports_pyg():
    files = sorted(SRC.rglob("*.py"))
    assert len(files) > 50 and any(f.name == "model.py" for f in files)
    hits = [str(f.relative_to(SRC)) for f in files if imported_roots(f) & set(DROPPED)]
    assert not hits, f"these modules import a dropped PyG package: {hits}"
