# roboloop_cc_library(NAME <name> [SHARED] SRCS ... [DEPS ...] [PUBLIC_DEPS ...])
# Declares library target roboloop_<name> with alias roboloop::<name>, warnings on and
# includes rooted at the repository.
function(roboloop_cc_library)
  cmake_parse_arguments(ARG "SHARED" "NAME" "SRCS;DEPS;PUBLIC_DEPS" ${ARGN})
  set(target roboloop_${ARG_NAME})
  if(ARG_SHARED)
    add_library(${target} SHARED ${ARG_SRCS})
  else()
    add_library(${target} STATIC ${ARG_SRCS})
  endif()
  add_library(roboloop::${ARG_NAME} ALIAS ${target})
  target_include_directories(${target} PUBLIC
    "${PROJECT_SOURCE_DIR}" "${PROJECT_BINARY_DIR}/proto")
  target_link_libraries(${target} PUBLIC ${ARG_PUBLIC_DEPS} PRIVATE ${ARG_DEPS})
  roboloop_set_warnings(${target})
endfunction()

# Turns on the project's warning flags for one target (host compiler flags through nvcc for
# CUDA sources).
function(roboloop_set_warnings target)
  target_compile_options(${target} PRIVATE "$<$<COMPILE_LANGUAGE:C,CXX>:-Wall;-Wextra>"
    "$<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra>")
endfunction()

# roboloop_cc_test(MODULE <module> NAME <file stem> [LABEL fast|slow] [DEPS ...] [TIMEOUT s]
#                  [GPU_TESTS <gtest filter>])
# Builds tests/<module>/<name>.cc into one test binary (main: tests/util/test_main.cc, a private
# temp folder per run) and registers its cases with
# gtest_discover_tests, labelled fast (default) or slow. The cases that GPU_TESTS matches (e.g.
# "*Cuda*:*Gpu*") are registered instead under the prefix "gpu." with the label gpu: they skip
# where no GPU is visible, and scripts/gpu-check.sh runs them with `ctest -L gpu`.
function(roboloop_cc_test)
  cmake_parse_arguments(ARG "" "MODULE;NAME;LABEL;TIMEOUT;GPU_TESTS" "DEPS" ${ARGN})
  if(NOT ARG_LABEL)
    set(ARG_LABEL fast)
  endif()
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 300)
  endif()
  set(target ${ARG_MODULE}_${ARG_NAME})
  add_executable(${target} "${CMAKE_CURRENT_SOURCE_DIR}/${ARG_MODULE}/${ARG_NAME}.cc")
  target_link_libraries(${target} PRIVATE ${ARG_DEPS} GTest::gtest GTest::gmock roboloop_test_main)
  target_include_directories(${target} PRIVATE "${PROJECT_SOURCE_DIR}")
  target_compile_definitions(${target} PRIVATE
    ROBOLOOP_BINARY_DIR="${PROJECT_BINARY_DIR}"
    ROBOLOOP_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
    ROBOLOOP_PYTHON="${ROBOLOOP_PYTHON}"
    ROBOLOOP_MUJOCO_INCLUDE_DIR="${ROBOLOOP_MUJOCO_DIR}/include")
  roboloop_set_warnings(${target})
  if(ARG_GPU_TESTS)
    gtest_discover_tests(${target} TEST_FILTER "-${ARG_GPU_TESTS}"
      PROPERTIES LABELS ${ARG_LABEL} TIMEOUT ${ARG_TIMEOUT}
      DISCOVERY_TIMEOUT 60)
    gtest_discover_tests(${target} TEST_FILTER "${ARG_GPU_TESTS}" TEST_PREFIX "gpu."
      PROPERTIES LABELS gpu TIMEOUT ${ARG_TIMEOUT}
      DISCOVERY_TIMEOUT 60)
  else()
    gtest_discover_tests(${target}
      PROPERTIES LABELS ${ARG_LABEL} TIMEOUT ${ARG_TIMEOUT}
      DISCOVERY_TIMEOUT 60)
  endif()
endfunction()

# roboloop_declared_services(<out_var> <proto_dir>)
# Sets <out_var> to the comma-separated full names (package.Service) of the gRPC services
# declared in <proto_dir>/*.proto. CMake re-runs when a file there is added, removed or edited.
function(roboloop_declared_services out_var proto_dir)
  file(GLOB protos CONFIGURE_DEPENDS "${proto_dir}/*.proto")
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${protos})
  set(names "")
  foreach(proto IN LISTS protos)
    file(STRINGS "${proto}" package_line REGEX "^package [A-Za-z0-9_.]+")
    string(REGEX REPLACE "^package ([A-Za-z0-9_.]+).*" "\\1" package "${package_line}")
    file(STRINGS "${proto}" service_lines REGEX "^service [A-Za-z0-9_]+")
    foreach(line IN LISTS service_lines)
      string(REGEX REPLACE "^service ([A-Za-z0-9_]+).*" "\\1" service "${line}")
      list(APPEND names "${package}.${service}")
    endforeach()
  endforeach()
  list(JOIN names "," joined)
  set(${out_var} "${joined}" PARENT_SCOPE)
endfunction()

# roboloop_proto_library(NAME <name> PROTO <file> [DEPS ...] [GRPC])
# Generates C++ (and gRPC stubs with GRPC) from proto/<file> into roboloop::proto_<name>.
function(roboloop_proto_library)
  cmake_parse_arguments(ARG "GRPC" "NAME;PROTO" "DEPS" ${ARGN})
  set(target roboloop_proto_${ARG_NAME})
  add_library(${target} STATIC "${CMAKE_CURRENT_SOURCE_DIR}/${ARG_PROTO}")
  add_library(roboloop::proto_${ARG_NAME} ALIAS ${target})
  target_include_directories(${target} PUBLIC "${PROJECT_BINARY_DIR}/proto")
  target_link_libraries(${target} PUBLIC protobuf::libprotobuf ${ARG_DEPS})
  protobuf_generate(TARGET ${target} LANGUAGE cpp
    IMPORT_DIRS "${CMAKE_CURRENT_SOURCE_DIR}"
    PROTOC_OUT_DIR "${PROJECT_BINARY_DIR}/proto")
  if(ARG_GRPC)
    target_link_libraries(${target} PUBLIC gRPC::grpc++)
    protobuf_generate(TARGET ${target} LANGUAGE grpc
      GENERATE_EXTENSIONS .grpc.pb.h .grpc.pb.cc
      PLUGIN "protoc-gen-grpc=$<TARGET_FILE:gRPC::grpc_cpp_plugin>"
      IMPORT_DIRS "${CMAKE_CURRENT_SOURCE_DIR}"
      PROTOC_OUT_DIR "${PROJECT_BINARY_DIR}/proto")
  endif()
endfunction()

# roboloop_clang_object(SOURCE <file> FLAGS <flag>... OUTPUT <var>)
# Compiles one torch-free source of this directory with Clang (through ccache when present)
# into an object file for a library's sources; sets <var> to its path. For kernels whose
# vector code GCC compiles badly (kernels/CMakeLists.txt).
function(roboloop_clang_object)
  cmake_parse_arguments(ARG "" "SOURCE;OUTPUT" "FLAGS" ${ARGN})
  get_filename_component(stem "${ARG_SOURCE}" NAME_WE)
  set(object "${CMAKE_CURRENT_BINARY_DIR}/${stem}.clang.o")
  set(build_flags ${CMAKE_CXX_FLAGS_RELEASE})
  separate_arguments(build_flags)
  set(launcher "")
  if(CCACHE_PROGRAM)
    set(launcher "${CCACHE_PROGRAM}")
  endif()
  add_custom_command(OUTPUT "${object}"
    COMMAND ${launcher} ${ROBOLOOP_CLANGXX} ${build_flags} -std=c++17 -fPIC -Wall -Wextra
      ${ARG_FLAGS} -I "${PROJECT_SOURCE_DIR}" -MD -MF "${object}.d"
      -c "${CMAKE_CURRENT_SOURCE_DIR}/${ARG_SOURCE}" -o "${object}"
    DEPENDS "${CMAKE_CURRENT_SOURCE_DIR}/${ARG_SOURCE}"
    DEPFILE "${object}.d"
    COMMENT "Building ${ARG_SOURCE} with Clang"
    VERBATIM)
  set(${ARG_OUTPUT} "${object}" PARENT_SCOPE)
endfunction()
