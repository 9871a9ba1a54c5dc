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
