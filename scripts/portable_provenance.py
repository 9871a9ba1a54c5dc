"""Rewrite the recorded command lines of the stored results (docs/results/*.json) as the harness now records them:
``contactkit`` for the program and no machine's absolute path (:func:`contactkit.eval.harness.portable_argv`). Only
``provenance.argv`` and ``provenance.command`` change (for results recorded before argv was: their command line);
run ``contactkit results`` afterwards.

    python scripts/portable_provenance.py
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path

from contactkit.eval.harness import command_of, portable_argv
from contactkit.eval.store import default_results_dir, source_root
from contactkit.files import write_atomic


def main() -> None:
    root = source_root()
    for path in sorted(default_results_dir().glob("*.json")):
        data = json.loads(path.read_text())
        prov = data.get("provenance") or {}
        recorded = prov.get("argv") or (shlex.split(prov["command"]) if prov.get("command") else None)
        if not recorded:
            continue
        argv = portable_argv(recorded, root)
        if command_of(argv) == prov.get("command") and (prov.get("argv") in (None, argv)):
            continue
        prov["command"] = command_of(argv)
        if prov.get("argv") is not None:
            prov["argv"] = argv
        write_atomic(path, json.dumps(data, indent=2) + "\n")
        print(f"{Path(path).relative_to(root)}: {prov['command']}")


if __name__ == "__main__":
    main()
