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
