#!/usr/bin/env bash
# Sets up everything AgentMath needs on a Debian machine; safe to run again (it skips what is there).
#   - Debian packages: Python 3 with SymPy/NumPy/SciPy/PyTorch, OpenBLAS, bubblewrap, Chromium (report checks)
#   - npm packages, including Node 24 from the npm registry (the `node` package)
# When it cannot install something it says exactly what to install and stops with exit code 1.
set -euo pipefail

cd "$(dirname "$0")/.."

DEBIAN_PACKAGES=(python3 python3-sympy python3-numpy python3-scipy python3-torch libopenblas0-pthread bubblewrap chromium)

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
    say "this is not a Debian-like system (no dpkg-query). Install by hand: Python 3 with SymPy, NumPy, SciPy, PyTorch (CPU), OpenBLAS, bubblewrap and Chromium, then run: npm install"
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

install_debian_packages
install_npm_packages
/usr/bin/python3 -c 'import sympy, numpy, scipy, torch' || {
  say "/usr/bin/python3 cannot import sympy, numpy, scipy and torch. Install: apt-get install -y python3-sympy python3-numpy python3-scipy python3-torch"
  exit 1
}
say "ready"
