"""write_atomic, read_safetensors and the bounded reader: new bytes or old, never a mix; special files refused."""

from pathlib import Path

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


def _problem(problem: str) -> ValueError:
    return ValueError(problem)


def _in_thread(fn, timeout_s: float = 10.0):
    """``fn()``'s result or exception, run in a daemon thread; ``"blocked"`` when it has not returned in time."""
    import threading

    out = {}

    def run():
        try:
            out["value"] = fn()
        except Exception as exc:  # the test inspects it
            out["value"] = exc

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(timeout_s)
    return "blocked" if t.is_alive() else out["value"]


def test_read_bounded_reads_a_regular_file_up_to_its_limit(tmp_path):
    from contactkit.files import read_bounded, read_bounded_text

    path = tmp_path / "a.json"
    path.write_bytes(b"{\"k\": 1}")
    assert read_bounded(path, 8, _problem) == b"{\"k\": 1}"
    with pytest.raises(ValueError, match="8 bytes exceeds the 7-byte limit"):
        read_bounded(path, 7, _problem)
    assert read_bounded_text(path, 100, _problem, "JSON") == "{\"k\": 1}"
    path.write_bytes(b"{\xff}")
    with pytest.raises(ValueError, match=r"not UTF-8 JSON \(byte 0xff at offset 1\)"):
        read_bounded_text(path, 100, _problem, "JSON")
    with pytest.raises(ValueError, match="cannot be read .No such file"):
        read_bounded(tmp_path / "missing", 100, _problem)


def test_read_bounded_refuses_special_files_without_blocking_or_reading_them(tmp_path):
    import os

    from contactkit.files import read_bounded

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    cases = {fifo: "is a FIFO (named pipe), expected a regular file",
             tmp_path: "is a directory, expected a regular file"}
    if os.path.exists("/dev/zero"):
        cases[Path("/dev/zero")] = "is a character device, expected a regular file"
    for path, problem in cases.items():
        result = _in_thread(lambda p=path: read_bounded(p, 1 << 20, _problem))
        assert isinstance(result, ValueError) and str(result) == problem, (path, result)


def test_read_bounded_stops_at_limit_plus_one_byte_when_the_size_lies(tmp_path, monkeypatch):
    """A regular file that reports a size below its content (as /proc files do) is still read only to the limit."""
    import os

    from contactkit import files

    path = tmp_path / "grows"
    path.write_bytes(b"x" * 1000)
    real_fstat = os.fstat

    class Lying:
        def __init__(self, st):
            self.st_mode, self.st_size = st.st_mode, 0

    monkeypatch.setattr(files.os, "fstat", lambda fd: Lying(real_fstat(fd)))
    asked = []
    real_read = os.read
    monkeypatch.setattr(files.os, "read", lambda fd, n: asked.append(n) or real_read(fd, n))
    with pytest.raises(ValueError, match="more than 100 bytes exceeds the 100-byte limit"):
        files.read_bounded(path, 100, _problem)
    assert sum(asked) == 101


def test_expect_path_checks_the_kind_without_opening(tmp_path):
    import os

    from contactkit.files import PathKind, expect_path

    f = tmp_path / "f"
    f.write_text("x")
    fifo = tmp_path / "p"
    os.mkfifo(fifo)
    assert expect_path(f, PathKind.FILE, _problem) == f
    assert expect_path(tmp_path, PathKind.DIRECTORY, _problem) == tmp_path
    with pytest.raises(ValueError, match="is a regular file, expected a directory"):
        expect_path(f, PathKind.DIRECTORY, _problem)
    with pytest.raises(ValueError, match="is a FIFO"):
        expect_path(fifo, PathKind.FILE, _problem)
