"""``--ray-address HOST:PORT`` reaches a cluster started by ``ray start --head`` with Ray's token authentication
on (Ray 2.60 turns it on by itself when the head machine has a token): the driver enables token mode as
``ray.init(address="auto")`` would. An explicit ``RAY_AUTH_MODE`` is left as set."""

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import pytest

from contactkit.data import parallel

HEAD_START_S = 90.0
"""Longest wait for the head's port to answer (a loaded 2-core machine)."""
DRIVER_S = 120.0
"""Longest run of the driver process (Ray retries a refused connection for about 20 s before failing)."""
STOP_S = 30.0
"""Longest wait for ``ray start --block`` to stop its processes after SIGTERM."""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _environment(token: str) -> dict:
    """This process's environment with a fresh token and ``RAY_AUTH_MODE`` unset (Ray decides, as for a user)."""
    env = {k: v for k, v in os.environ.items() if k not in (parallel.AUTH_MODE_ENV, "RAY_ADDRESS")}
    env["RAY_AUTH_TOKEN"] = token
    return env


@pytest.fixture(scope="module")
def token_head():
    """``ray start --head --block`` of one CPU on a free port, its own temp folder, a fresh token in
    ``RAY_AUTH_TOKEN`` and ``RAY_AUTH_MODE`` unset (so Ray turns token authentication on); yields
    ``(address, environment)``; stopped (SIGTERM, it stops its processes) at the end."""
    port, token = _free_port(), uuid.uuid4().hex
    env, temp = _environment(token), tempfile.mkdtemp(prefix="ck-ray-", dir="/tmp")  # socket paths stay short
    ray_cli = Path(sys.executable).parent / "ray"
    head = subprocess.Popen([str(ray_cli), "start", "--head", "--num-cpus", "1", "--port", str(port),
                             "--include-dashboard", "false", "--temp-dir", temp, "--block"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + HEAD_START_S
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1.0).close()
                break
            except OSError:
                if head.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"ray start --head did not come up: {head.stderr.read() if head.poll() else ''}")
                time.sleep(0.5)
        yield f"127.0.0.1:{port}", env
    finally:
        head.terminate()
        try:
            head.wait(STOP_S)
        except subprocess.TimeoutExpired:
            head.kill()
            head.wait()
        shutil.rmtree(temp, ignore_errors=True)


DRIVER = """
import sys
from contactkit.data.parallel import RayPool
with RayPool(1, sys.argv[1]) as pool:
    print("results", pool.map(abs, [-3, 4]))
"""


@pytest.mark.slow
def test_an_explicit_address_reaches_a_head_with_token_authentication(token_head):
    address, env = token_head
    run = subprocess.run([sys.executable, "-c", DRIVER, address], env=env, capture_output=True, text=True,
                         timeout=DRIVER_S)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "results [3, 4]" in run.stdout


@pytest.mark.slow
def test_a_wrong_token_is_refused_with_what_to_set(token_head):
    address, env = token_head
    run = subprocess.run([sys.executable, "-c", DRIVER, address], env={**env, "RAY_AUTH_TOKEN": uuid.uuid4().hex},
                         capture_output=True, text=True, timeout=DRIVER_S)
    assert run.returncode != 0 and "results" not in run.stdout
    assert f"--ray-address {address}: cannot connect" in run.stderr
    assert parallel.AUTH_HINT in run.stderr


def test_token_mode_is_left_alone_when_set_or_for_auto(monkeypatch):
    monkeypatch.setenv(parallel.AUTH_MODE_ENV, "disabled")
    monkeypatch.setenv("RAY_AUTH_TOKEN", uuid.uuid4().hex)
    assert parallel.enable_token_auth("127.0.0.1:6379") is False
    assert os.environ[parallel.AUTH_MODE_ENV] == "disabled"
    monkeypatch.delenv(parallel.AUTH_MODE_ENV)
    assert parallel.enable_token_auth("auto") is False  # Ray decides for 'auto' itself
    assert parallel.enable_token_auth("ray://127.0.0.1:10001") is False
    assert parallel.AUTH_MODE_ENV not in os.environ
