# Apache Arrow/Parquet C++ and FFmpeg, the libraries behind data/lerobot_* (LeRobot v3 datasets:
# parquet tables and mp4 videos; docs/lerobot.md). Arrow and Parquet are the C++ libraries and
# headers the pinned pyarrow wheel of python/pins.txt ships (Debian 12 packages neither); FFmpeg's
# libavformat/libavcodec/libavutil/libswscale come from Debian. Defines the imported targets
# arrow::arrow, arrow::parquet and PkgConfig::ffmpeg, linked only by roboloop::lerobot.

roboloop_python_query(ROBOLOOP_PYARROW_DIR pyarrow
  "import importlib.util, os; print(os.path.dirname(importlib.util.find_spec('pyarrow').origin))")
roboloop_python_query(ROBOLOOP_ARROW_SO_VERSION pyarrow
  "import pyarrow; print(pyarrow.cpp_build_info.so_version)")

# One library of the wheel (lib<name>.so.<so version>) as an imported target with its headers
# (`header` is one of them, checked to exist).
function(roboloop_pyarrow_library target name header)
  set(library "${ROBOLOOP_PYARROW_DIR}/lib${name}.so.${ROBOLOOP_ARROW_SO_VERSION}")
  if(NOT EXISTS "${library}" OR NOT EXISTS "${ROBOLOOP_PYARROW_DIR}/include/${header}")
    message(FATAL_ERROR "the pyarrow wheel in ${ROBOLOOP_VENV} lacks ${library} or its C++ headers; "
      "reinstall it with scripts/install-deps.sh")
  endif()
  add_library(${target} SHARED IMPORTED GLOBAL)
  set_target_properties(${target} PROPERTIES
    IMPORTED_LOCATION "${library}"
    IMPORTED_SONAME "lib${name}.so.${ROBOLOOP_ARROW_SO_VERSION}"
    INTERFACE_INCLUDE_DIRECTORIES "${ROBOLOOP_PYARROW_DIR}/include")
endfunction()

roboloop_pyarrow_library(arrow::arrow arrow arrow/api.h)
roboloop_pyarrow_library(arrow::parquet parquet parquet/arrow/reader.h)
set_property(TARGET arrow::parquet PROPERTY INTERFACE_LINK_LIBRARIES arrow::arrow)

find_package(PkgConfig REQUIRED)
pkg_check_modules(ffmpeg REQUIRED IMPORTED_TARGET libavformat libavcodec libavutil libswscale)
message(STATUS "roboloop LeRobot datasets: Arrow/Parquet ${ROBOLOOP_ARROW_SO_VERSION} from ${ROBOLOOP_PYARROW_DIR}, "
  "FFmpeg libavcodec ${ffmpeg_libavcodec_VERSION}")

# LeRobot's own environment (scripts/lerobot-venv.sh), where the tests run LeRobot itself.
set(ROBOLOOP_LEROBOT_VENV "${ROBOLOOP_VENV}/../lerobot-venv" CACHE PATH
  "Python virtual environment holding the pinned lerobot (tests and benchmarks only)")
