#!/bin/sh
# The GPU check: the trainer and the embedded engine at the paper's smaller sizes on one GPU
# (python/agentmath_train/gpu_check.py says what it measures; docs/training.md has the figures).
# Needs only Python with torch and transformers: .venv/bin/python when it works, else python3
# on PATH ($AGENTMATH_PYTHON overrides both). Writes gpu-check.json to $OUT, else here.
#   scripts/gpu-check.sh              # on a GPU machine, ≤ 8 minutes
#   scripts/gpu-check.sh --dry-run    # on CPU with tiny shapes, in seconds
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
python=${AGENTMATH_PYTHON:-}
if [ -z "$python" ]; then
  if [ -x "$root/.venv/bin/python" ] && "$root/.venv/bin/python" -c 'import torch, transformers' >/dev/null 2>&1; then
    python="$root/.venv/bin/python"
  else
    python=python3
  fi
fi
PYTHONPATH="$root/python${PYTHONPATH:+:$PYTHONPATH}" HF_HUB_OFFLINE=1 TRANSFORMERS_VERBOSITY=error \
  HF_HUB_DISABLE_PROGRESS_BARS=1 exec "$python" -m agentmath_train.gpu_check "$@"
