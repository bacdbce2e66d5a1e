# Checks the include house rules (docs/architecture.md, "House rules") over a source tree: each
# #include of a project header, in a C++/CUDA source under a ruled top-level folder, must name
# that folder, a folder its rule allows, or a header a named exception allows. Prints every
# offending `file:line` with the rule it breaks, and every exception that matched nothing, then
# fails; succeeds silently otherwise. Needs nothing but CMake.
#
#   cmake -DROOT=<source tree> -DRULES=<rules file> -P CheckHouseRules.cmake
#
# The rules file calls roboloop_house_rule and roboloop_house_rule_exception (see
# cmake/RoboloopHouseRules.cmake).

cmake_minimum_required(VERSION 3.20)

# roboloop_house_rule(FOLDER <folder> MAY_INCLUDE [<folder>...])
# Rules the sources under ROOT/<folder>: besides their own folder they may include headers of
# the MAY_INCLUDE folders only.
macro(roboloop_house_rule)
  cmake_parse_arguments(RULE "" "FOLDER" "MAY_INCLUDE" ${ARGN})
  list(APPEND ruled_folders ${RULE_FOLDER})
  set(may_include_${RULE_FOLDER} ${RULE_MAY_INCLUDE})
endmacro()

# roboloop_house_rule_exception(NAME <name> FOLDER <folder> HEADER <folder>/<path> REASON <why>)
# Lets the sources of FOLDER include HEADER although their rule forbids its folder.
macro(roboloop_house_rule_exception)
  cmake_parse_arguments(EXCEPTION "" "NAME;FOLDER;HEADER;REASON" "" ${ARGN})
  if(NOT EXCEPTION_NAME OR NOT EXCEPTION_FOLDER OR NOT EXCEPTION_HEADER OR NOT EXCEPTION_REASON)
    message(FATAL_ERROR "${RULES}: an exception needs NAME, FOLDER, HEADER and REASON")
  endif()
  list(APPEND exception_names ${EXCEPTION_NAME})
  set(exception_key_${EXCEPTION_NAME} "${EXCEPTION_FOLDER}>${EXCEPTION_HEADER}")
endmacro()

# Sets `out` to the 1-based line of the first occurrence of `text` in `file`.
function(line_of file text out)
  file(READ "${file}" content)
  string(FIND "${content}" "${text}" position)
  string(SUBSTRING "${content}" 0 ${position} before)
  string(REGEX MATCHALL "\n" newlines "${before}")
  list(LENGTH newlines count)
  math(EXPR line "${count} + 1")
  set(${out} ${line} PARENT_SCOPE)
endfunction()

# Returns in `out` the exception allowing sources of `folder` to include `header`, or "".
function(exception_for folder header out)
  set(found "")
  foreach(name IN LISTS exception_names)
    if(exception_key_${name} STREQUAL "${folder}>${header}")
      set(found ${name})
    endif()
  endforeach()
  set(${out} "${found}" PARENT_SCOPE)
endfunction()

if(NOT ROOT OR NOT RULES)
  message(FATAL_ERROR "usage: cmake -DROOT=<source tree> -DRULES=<rules file> -P ${CMAKE_SCRIPT_MODE_FILE}")
endif()
set(ruled_folders "")
set(exception_names "")
include("${RULES}")

set(violations 0)
set(used_exceptions "")
foreach(folder IN LISTS ruled_folders)
  file(GLOB_RECURSE sources RELATIVE "${ROOT}" "${ROOT}/${folder}/*.h" "${ROOT}/${folder}/*.hpp"
    "${ROOT}/${folder}/*.cc" "${ROOT}/${folder}/*.cpp" "${ROOT}/${folder}/*.cu"
    "${ROOT}/${folder}/*.cuh" "${ROOT}/${folder}/*.inc")
  foreach(source IN LISTS sources)
    file(STRINGS "${ROOT}/${source}" includes ENCODING UTF-8
      REGEX "^[ \t]*#[ \t]*include[ \t]*[\"<][A-Za-z0-9_]+/[^\">]*[\">]")
    foreach(include IN LISTS includes)
      string(REGEX MATCH "[\"<](([A-Za-z0-9_]+)/[^\">]*)[\">]" quoted "${include}")
      set(header "${CMAKE_MATCH_1}")
      set(target "${CMAKE_MATCH_2}")
      if(target STREQUAL folder OR NOT target IN_LIST ruled_folders OR
         target IN_LIST may_include_${folder})
        continue()
      endif()
      exception_for(${folder} "${header}" exception)
      if(exception)
        list(APPEND used_exceptions ${exception})
        continue()
      endif()
      line_of("${ROOT}/${source}" "${include}" line)
      string(REPLACE ";" " " allowed "${may_include_${folder}}")
      if(NOT allowed)
        set(allowed "no other folder")
      endif()
      message(NOTICE "${source}:${line}: includes \"${header}\", but ${folder}/ may include only "
        "${allowed} (house rules, docs/architecture.md; rules in ${RULES})")
      math(EXPR violations "${violations} + 1")
    endforeach()
  endforeach()
endforeach()

set(stale 0)
foreach(name IN LISTS exception_names)
  if(NOT name IN_LIST used_exceptions)
    message(NOTICE "exception '${name}' (${exception_key_${name}}) matched no include: delete it "
      "from ${RULES}")
    math(EXPR stale "${stale} + 1")
  endif()
endforeach()

if(violations GREATER 0 OR stale GREATER 0)
  message(FATAL_ERROR "house rules broken: ${violations} forbidden include(s), ${stale} stale "
    "exception(s)")
endif()
