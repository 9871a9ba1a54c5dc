"""write_atomic: the new bytes or the old, never a mix, and no debris."""

import pytest

from contactkit.files import write_atomic


def test_write_atomic_writes_text_and_bytes_and_creates_the_folder(tmp_path):
    path = write_atomic(tmp_path / "a" / "b.txt", "µm")
    assert path.read_bytes() == "µm".encode()
    write_atomic(path, b"\x00\x01")
    assert path.read_bytes() == b"\x00\x01"
    assert sorted(p.name for p in path.parent.iterdir()) == ["b.txt"]


def test_a_failed_write_keeps_the_old_file_and_leaves_no_temporary(tmp_path, monkeypatch):
    path = write_atomic(tmp_path / "c.json", "{}")

    def failing_replace(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr("contactkit.files.os.replace", failing_replace)
    with pytest.raises(OSError, match="disk full"):
        write_atomic(path, "{\"new\": 1}")
    assert path.read_text() == "{}"
    assert [p.name for p in tmp_path.iterdir()] == ["c.json"]


def _fail(problem: str) -> ValueError:
    return ValueError(problem)


def test_read_safetensors_accepts_a_valid_file_and_refuses_each_broken_part(tmp_path):
    import numpy as np
    import safetensors.numpy

    from contactkit.files import read_safetensors

    good = safetensors.numpy.save({"w": np.arange(6, dtype=np.float64).reshape(2, 3)}, metadata={"format": "x"})
    path = tmp_path / "ok.safetensors"
    path.write_bytes(good)
    data, header = read_safetensors(path, 1 << 20, _fail)
    assert data == good and header["w"]["shape"] == [2, 3] and header["__metadata__"] == {"format": "x"}
    cases = {
        "exceeds the 10-byte limit": (good, 10),
        "truncated": (good[:-8], 1 << 20),
        "header is not JSON": (len(b"{nope").to_bytes(8, "little") + b"{nope", 1 << 20),
        "not a JSON object": (len(b"[1]").to_bytes(8, "little") + b"[1]", 1 << 20),
    }
    for problem, (payload, limit) in cases.items():
        path.write_bytes(payload)
        with pytest.raises(ValueError, match=problem):
            read_safetensors(path, limit, _fail)
    with pytest.raises(ValueError, match="cannot be read"):
        read_safetensors(tmp_path / "missing.safetensors", 1 << 20, _fail)
