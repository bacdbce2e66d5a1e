# LibTorch, MuJoCo and the CUDA toolkit: the pinned toolchain of python/pins.txt, taken from the
# project's Python virtual environment (scripts/install-deps.sh creates it; docs/toolchain.md).
# Defines mujoco::mujoco, ROBOLOOP_PYTHON (the environment's interpreter, for test fixtures and
# peer benchmarks), ROBOLOOP_TORCH_VERSION and ROBOLOOP_MUJOCO_VERSION, enables CUDA and finds Torch.

if(DEFINED ENV{ROBOLOOP_VENV} AND NOT "$ENV{ROBOLOOP_VENV}" STREQUAL "")
  set(roboloop_default_venv "$ENV{ROBOLOOP_VENV}")
elseif(DEFINED ENV{XDG_CACHE_HOME} AND NOT "$ENV{XDG_CACHE_HOME}" STREQUAL "")
  set(roboloop_default_venv "$ENV{XDG_CACHE_HOME}/roboloop/venv")
else()
  set(roboloop_default_venv "$ENV{HOME}/.cache/roboloop/venv")
endif()
set(ROBOLOOP_VENV "${roboloop_default_venv}" CACHE PATH
  "Python virtual environment holding the pinned LibTorch and MuJoCo wheels")

set(ROBOLOOP_PYTHON "${ROBOLOOP_VENV}/bin/python")
if(NOT EXISTS "${ROBOLOOP_PYTHON}")
  message(FATAL_ERROR "roboloop takes LibTorch and MuJoCo from the Python environment "
    "${ROBOLOOP_VENV}, which does not exist. Run scripts/install-deps.sh (or point -DROBOLOOP_VENV "
    "at an environment with the wheels of python/pins.txt).")
endif()

# Asks the environment's Python for one value; fails naming the wheel when it cannot answer.
function(roboloop_python_query out_var wheel code)
  execute_process(COMMAND "${ROBOLOOP_PYTHON}" -c "${code}"
    OUTPUT_VARIABLE value ERROR_VARIABLE error RESULT_VARIABLE rc
    OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${ROBOLOOP_PYTHON} cannot import ${wheel} (${error}). "
      "Run scripts/install-deps.sh to install the pins of python/pins.txt.")
  endif()
  set(${out_var} "${value}" PARENT_SCOPE)
endfunction()

roboloop_python_query(ROBOLOOP_TORCH_PREFIX torch
  "import torch.utils; print(torch.utils.cmake_prefix_path)")
roboloop_python_query(ROBOLOOP_TORCH_VERSION torch
  "import importlib.metadata as m; print(m.version('torch'))")
roboloop_python_query(ROBOLOOP_NCCL_INCLUDE_DIR nvidia-nccl-cu13
  "import importlib.util, os; print(os.path.join(list(importlib.util.find_spec('nvidia.nccl').submodule_search_locations)[0], 'include'))")
roboloop_python_query(ROBOLOOP_GYMNASIUM_ASSETS gymnasium
  "import importlib.util, os; print(os.path.join(os.path.dirname(importlib.util.find_spec('gymnasium').origin), 'envs', 'mujoco', 'assets'))")
roboloop_python_query(ROBOLOOP_MUJOCO_DIR mujoco
  "import importlib.util, os; print(os.path.dirname(importlib.util.find_spec('mujoco').origin))")
roboloop_python_query(ROBOLOOP_MUJOCO_VERSION mujoco
  "import importlib.metadata as m; print(m.version('mujoco'))")

# MuJoCo: the wheel's libmujoco.so.<version> and C headers as an imported target.
set(roboloop_mujoco_library "${ROBOLOOP_MUJOCO_DIR}/libmujoco.so.${ROBOLOOP_MUJOCO_VERSION}")
if(NOT EXISTS "${roboloop_mujoco_library}" OR NOT EXISTS "${ROBOLOOP_MUJOCO_DIR}/include/mujoco/mujoco.h")
  message(FATAL_ERROR "the mujoco wheel in ${ROBOLOOP_VENV} lacks ${roboloop_mujoco_library} or its "
    "C headers; reinstall it with scripts/install-deps.sh")
endif()
add_library(mujoco::mujoco SHARED IMPORTED GLOBAL)
set_target_properties(mujoco::mujoco PROPERTIES
  IMPORTED_LOCATION "${roboloop_mujoco_library}"
  IMPORTED_SONAME "libmujoco.so.${ROBOLOOP_MUJOCO_VERSION}"
  INTERFACE_INCLUDE_DIRECTORIES "${ROBOLOOP_MUJOCO_DIR}/include")

# CUDA: required, so every build compiles the whole GPU path. The system toolkit (CUDACXX, PATH,
# /usr/local/cuda) wins; else the nvcc that install-deps.sh took from PyPI into the environment.
if(NOT CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX})
  find_program(roboloop_nvcc nvcc PATHS /usr/local/cuda/bin NO_CACHE)
  if(NOT roboloop_nvcc)
    file(GLOB roboloop_nvcc "${ROBOLOOP_VENV}/lib/python3*/site-packages/nvidia/cu13/bin/nvcc")
  endif()
  if(roboloop_nvcc)
    list(GET roboloop_nvcc 0 roboloop_nvcc)
    set(CMAKE_CUDA_COMPILER "${roboloop_nvcc}" CACHE FILEPATH "CUDA compiler")
  endif()
endif()
include(CheckLanguage)
check_language(CUDA)
if(NOT CMAKE_CUDA_COMPILER)
  message(FATAL_ERROR "roboloop needs the CUDA 13.0 toolkit (nvcc and the CUDA headers) to build, "
    "with or without a GPU: none was found in CUDACXX, PATH, /usr/local/cuda or ${ROBOLOOP_VENV}. "
    "Install NVIDIA's CUDA 13.0 toolkit, or run scripts/install-deps.sh, which takes nvcc from "
    "PyPI's cuda-toolkit wheels when no toolkit is installed.")
endif()

# GPU architectures: data-centre GPUs of the last generations (A100, H100/H200, B200) unless told.
if(NOT DEFINED TORCH_CUDA_ARCH_LIST)
  if(DEFINED ENV{TORCH_CUDA_ARCH_LIST} AND NOT "$ENV{TORCH_CUDA_ARCH_LIST}" STREQUAL "")
    set(TORCH_CUDA_ARCH_LIST "$ENV{TORCH_CUDA_ARCH_LIST}")
  else()
    set(TORCH_CUDA_ARCH_LIST "8.0;9.0;10.0")
  endif()
endif()
set(TORCH_CUDA_ARCH_LIST "${TORCH_CUDA_ARCH_LIST}" CACHE STRING
  "GPU architectures (compute capabilities) compiled into the CUDA code")
string(REPLACE "." "" roboloop_cuda_architectures "${TORCH_CUDA_ARCH_LIST}")
set(CMAKE_CUDA_ARCHITECTURES "${roboloop_cuda_architectures}")
if(CCACHE_PROGRAM)
  set(CMAKE_CUDA_COMPILER_LAUNCHER "${CCACHE_PROGRAM}")
endif()
enable_language(CUDA)
# CUDA 13 ships no nvToolsExt library (only the header-only nvtx3), and CMake 3.25's
# FindCUDAToolkit then sets a property on the missing CUDA::nvToolsExt and fails (seen with the
# PyPI toolkit on a bare Debian 12): an empty interface target stands in for it.
if(NOT TARGET CUDA::nvToolsExt)
  add_library(CUDA::nvToolsExt INTERFACE IMPORTED)
endif()
find_package(CUDAToolkit REQUIRED)

# LibTorch's CMake finds CUDA with the legacy FindCUDA: point it at the toolkit nvcc belongs to
# (the system's, or the PyPI wheels' folder, which install-deps.sh lays out as a toolkit).
get_filename_component(roboloop_cuda_root "${CUDAToolkit_BIN_DIR}" DIRECTORY)
set(CUDA_TOOLKIT_ROOT_DIR "${roboloop_cuda_root}" CACHE PATH "CUDA toolkit LibTorch builds against")
list(PREPEND CMAKE_PREFIX_PATH "${ROBOLOOP_TORCH_PREFIX}")
find_package(Torch REQUIRED)
message(STATUS "roboloop toolchain: LibTorch ${ROBOLOOP_TORCH_VERSION}, MuJoCo ${ROBOLOOP_MUJOCO_VERSION}, "
  "CUDA ${CUDAToolkit_VERSION} (${TORCH_CUDA_ARCH_LIST}), environment ${ROBOLOOP_VENV}")
