# Sourced by the scripts: where the project's Python virtual environment lives and which nvcc
# builds the CUDA code.

# ROBOLOOP_VENV overrides; the default is per user, shared by all clones of that user.
ROBOLOOP_VENV="${ROBOLOOP_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/roboloop/venv}"
export ROBOLOOP_VENV

# Prints the system CUDA toolkit's nvcc ($CUDACXX, then PATH, then /usr/local/cuda), or nothing.
# ROBOLOOP_IGNORE_SYSTEM_CUDA=1 hides it (to test the PyPI fallback on a machine that has one).
roboloop_system_nvcc() {
  if [ "${ROBOLOOP_IGNORE_SYSTEM_CUDA:-0}" = 1 ]; then return 0; fi
  for candidate in "${CUDACXX:-}" "$(command -v nvcc || true)" /usr/local/cuda/bin/nvcc; do
    if [ -n "$candidate" ] && [ -x "$candidate" ]; then echo "$candidate"; return 0; fi
  done
}

# Prints the nvcc the build uses: the system toolkit's, else the one install-deps.sh put into
# the virtual environment from PyPI's CUDA toolkit wheels, else nothing.
roboloop_nvcc() {
  local system
  system="$(roboloop_system_nvcc)"
  if [ -n "$system" ]; then echo "$system"; return 0; fi
  local wheel
  for wheel in "$ROBOLOOP_VENV"/lib/python3*/site-packages/nvidia/cu13/bin/nvcc; do
    if [ -x "$wheel" ]; then echo "$wheel"; return 0; fi
  done
}
