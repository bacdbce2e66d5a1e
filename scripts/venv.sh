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

# Prints the nvcc of the nvidia-* CUDA wheels that the Python $1 imports (pip's nvidia-cuda-nvcc,
# or cuda-toolkit[nvcc], lays it out as site-packages/nvidia/cu13/bin/nvcc), or nothing. Asking
# Python finds it in any folder on its path, also one that a .pth file adds.
roboloop_wheel_nvcc() {
  if [ ! -x "$1" ]; then return 0; fi
  "$1" - 2>/dev/null <<'EOF' || true
import glob, os
try:
    import nvidia
except ImportError:
    raise SystemExit(0)
for folder in nvidia.__path__:
    for nvcc in sorted(glob.glob(os.path.join(folder, "*", "bin", "nvcc"))):
        if os.access(nvcc, os.X_OK):
            print(nvcc)
            raise SystemExit(0)
EOF
}

# Prints the nvcc the build uses: the system toolkit's, else the one of the CUDA toolkit wheels
# that the virtual environment's Python imports (install-deps.sh puts them there), else nothing.
roboloop_nvcc() {
  local system
  system="$(roboloop_system_nvcc)"
  if [ -n "$system" ]; then echo "$system"; return 0; fi
  roboloop_wheel_nvcc "$ROBOLOOP_VENV/bin/python"
}

# Makes the folder $2 a CUDA toolkit that shows the wheels' folder $1 (site-packages/nvidia/cu13)
# without writing into it: links to each of $1's entries, and a lib/ (with lib64 pointing at it)
# holding links to $1's libraries plus the unversioned libNAME.so links that the wheels lack
# (what install-deps.sh's lay_out_cuda_wheels_as_a_toolkit adds in place, for nvcc's profile and
# CMake's CUDA modules). nvcc takes its toolkit from the folder it is called through ("bin/.."),
# so $2/bin is a folder of links, and $2/bin/nvcc builds against $2. Replaces $2; prints
# $2/bin/nvcc.
roboloop_cuda_toolkit_view() {
  local toolkit="$1" view="$2" entry libraries unversioned
  rm -rf "$view"
  mkdir -p "$view/bin" "$view/lib"
  for entry in "$toolkit"/*; do
    case "$(basename "$entry")" in
      bin | lib | lib64) ;;
      *) ln -s "$entry" "$view/" ;;
    esac
  done
  for entry in "$toolkit"/bin/*; do ln -s "$entry" "$view/bin/"; done
  libraries="$toolkit/lib"
  if [ -d "$toolkit/lib64" ]; then libraries="$toolkit/lib64"; fi
  for entry in "$libraries"/*; do
    if [ -e "$entry" ]; then ln -s "$entry" "$view/lib/"; fi
  done
  for entry in "$view"/lib/lib*.so.*; do
    unversioned="${entry%%.so.*}.so"
    if [ -e "$entry" ] && [ ! -e "$unversioned" ]; then ln -s "$(basename "$entry")" "$unversioned"; fi
  done
  ln -s lib "$view/lib64"
  echo "$view/bin/nvcc"
}
