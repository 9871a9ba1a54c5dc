#!/usr/bin/env bash
# Prepare what scripts/gpu_train_actfignet.py needs on a lent GPU machine (its image has PyTorch, numpy, scipy, h5py,
# numba, safetensors, typer and rich, but not MuJoCo and a few others; nothing can be fetched there).
#   .whl/      wheels for Python 3.12 (MuJoCo 4.0.0 and its core, osqp, roma, gymnasium, PyOpenGL, glfw): ~27 MB
#   .devstub/  an empty 'coal' module: contactkit.collision imports COAL (300 MB with its libraries) at import time,
#              but collecting, training and evaluating Act-FIGNet never call it (a call would fail loudly)
# Both folders are git-ignored (.git/info/exclude) and travel with `carry`. Then, on the device (one command):
#   python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl &&
#   export PYTHONPATH=/tmp/site:$PWD/src:$PWD/.devstub MUJOCO_GL=disable PYTHONUNBUFFERED=1 &&
#   python3 scripts/gpu_train_actfignet.py "$OUT"
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .git/info .whl .devstub
for p in /.whl/ /.devstub/; do grep -qx "$p" .git/info/exclude 2>/dev/null || echo "$p" >> .git/info/exclude; done
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
  --platform manylinux2014_x86_64 -d .whl mujoco==4.0.0 mujoco-core==4.0.0 mujoco-studio==4.0.0 osqp==1.1.3 \
  roma==1.8.0 gymnasium==1.4.0 farama-notifications==0.0.6 pyopengl==3.1.10 glfw==2.11.0
echo '"""Stand-in for COAL on the GPU machine (scripts/gpu_wheels.sh): imported, never called."""' > .devstub/coal.py
du -sh .whl
