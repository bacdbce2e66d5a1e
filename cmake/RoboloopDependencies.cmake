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
find_package(HDF5 REQUIRED COMPONENTS C)
find_package(ZLIB REQUIRED)
# libdeflate (Debian's libdeflate-dev): the data module's frame codec (data/frame_codec.h). Found
# by hand: Debian 12's libdeflate.pc names /usr/lib rather than the multiarch folder.
find_path(LIBDEFLATE_INCLUDE_DIR libdeflate.h)
find_library(LIBDEFLATE_LIBRARY deflate)
if(NOT LIBDEFLATE_INCLUDE_DIR OR NOT LIBDEFLATE_LIBRARY)
  message(FATAL_ERROR "libdeflate not found (libdeflate.h, libdeflate.so): install Debian's libdeflate-dev "
                      "(scripts/install-deps.sh)")
endif()
add_library(libdeflate::libdeflate UNKNOWN IMPORTED)
set_target_properties(libdeflate::libdeflate PROPERTIES
  IMPORTED_LOCATION "${LIBDEFLATE_LIBRARY}"
  INTERFACE_INCLUDE_DIRECTORIES "${LIBDEFLATE_INCLUDE_DIR}")
if(ROBOLOOP_BUILD_TESTS)
  find_package(GTest CONFIG REQUIRED)
endif()
find_package(Gloo CONFIG REQUIRED)
# LibTorch, MuJoCo and CUDA from the pinned toolchain. LibTorch is found once here so kernels/
# and train/ see it, but linked only into the on-demand shared library roboloop_torch (and into
# test/bench binaries of those modules), never into torch-free targets.
include(RoboloopToolchain)
# Arrow/Parquet (from the pyarrow wheel) and FFmpeg, for LeRobot datasets only.
include(RoboloopLeRobot)
