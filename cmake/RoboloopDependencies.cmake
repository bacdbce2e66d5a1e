# Finds every third-party dependency once, for all modules.
find_package(Threads REQUIRED)
find_package(absl CONFIG REQUIRED)
find_package(Protobuf REQUIRED)
find_package(gRPC CONFIG REQUIRED)
find_package(OpenSSL REQUIRED)
find_package(SQLite3 REQUIRED)
find_package(yaml-cpp CONFIG REQUIRED)
find_package(CLI11 CONFIG REQUIRED)
find_package(spdlog CONFIG REQUIRED)
find_package(nlohmann_json CONFIG REQUIRED)
find_package(Boost REQUIRED)
find_package(mujoco CONFIG REQUIRED)
find_package(HDF5 REQUIRED COMPONENTS C)
find_package(ZLIB REQUIRED)
if(ROBOLOOP_BUILD_TESTS)
  find_package(GTest CONFIG REQUIRED)
endif()
# LibTorch: found once here so kernels/ and train/ see it, but linked only into the on-demand
# shared library roboloop_torch (and into test/bench binaries of those modules), never into
# torch-free targets.
find_package(Torch REQUIRED)

# CUDA (issue 5, req 6): the torch-free CUDA attention kernels build whenever nvcc is found
# (so machines with the toolkit but no GPU still compile-check them), for sm_90; the LibTorch
# adapter that runs them on CUDA tensors builds only when LibTorch itself has CUDA.
option(ROBOLOOP_CUDA "Build the CUDA kernels when a CUDA compiler is found" ON)
if(ROBOLOOP_CUDA)
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES 90)
    endif()
    if(CCACHE_PROGRAM)
      set(CMAKE_CUDA_COMPILER_LAUNCHER "${CCACHE_PROGRAM}")
    endif()
    enable_language(CUDA)
    find_package(CUDAToolkit REQUIRED)
  endif()
endif()
