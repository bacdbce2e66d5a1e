# Checks that the repository's documentation stands on its own (issue 26, item 8):
#  - every relative link `[text](target)` of a Markdown file resolves to a file or folder inside ROOT;
#  - every citation `docs/architecture.md §N` (also `§N, §M`) in a source, script or page names a
#    section `## N.` of docs/architecture.md;
#  - nothing cites the design page outside the repository (`ARCHITECTURE §N`, `../shared/`).
# Prints one line per problem (`file: what is wrong`) and fails when there is any.
#
#   cmake -DROOT=<repository root> -P CheckDocLinks.cmake

cmake_minimum_required(VERSION 3.20)

if(NOT ROOT)
  message(FATAL_ERROR "CheckDocLinks.cmake: pass -DROOT=<repository root>")
endif()
get_filename_component(ROOT "${ROOT}" ABSOLUTE)

# Top-level entries that are not the project's own text: build trees, VCS data, bundled packages.
set(skipped_top_level "^(build.*|\\.git|gpu-bundle|Testing)$")

# Sets `out` to every checked file under ROOT (sources, scripts, protos, CMake files, pages).
function(checked_files out)
  file(GLOB top RELATIVE "${ROOT}" "${ROOT}/*")
  set(files "")
  foreach(entry IN LISTS top)
    if(entry MATCHES "${skipped_top_level}")
      continue()
    endif()
    if(IS_DIRECTORY "${ROOT}/${entry}")
      file(GLOB_RECURSE found "${ROOT}/${entry}/*.md" "${ROOT}/${entry}/*.h" "${ROOT}/${entry}/*.cc"
        "${ROOT}/${entry}/*.cu" "${ROOT}/${entry}/*.proto" "${ROOT}/${entry}/*.cmake"
        "${ROOT}/${entry}/CMakeLists.txt" "${ROOT}/${entry}/*.sh" "${ROOT}/${entry}/*.py"
        "${ROOT}/${entry}/*.yaml")
      list(APPEND files ${found})
    elseif(entry MATCHES "\\.(md|txt|cmake)$")
      list(APPEND files "${ROOT}/${entry}")
    endif()
  endforeach()
  set(${out} ${files} PARENT_SCOPE)
endfunction()

# Sets `out` to the section numbers (`## N.`) of docs/architecture.md.
function(architecture_sections out)
  set(page "${ROOT}/docs/architecture.md")
  set(numbers "")
  if(EXISTS "${page}")
    file(STRINGS "${page}" headings REGEX "^## [0-9]+\\.")
    foreach(heading IN LISTS headings)
      string(REGEX REPLACE "^## ([0-9]+)\\..*" "\\1" number "${heading}")
      list(APPEND numbers "${number}")
    endforeach()
  endif()
  set(${out} ${numbers} PARENT_SCOPE)
endfunction()

# Appends to the list `problems_var` names each relative link of the Markdown `file` that leaves ROOT or names nothing.
function(check_links file problems_var)
  file(READ "${file}" text)
  get_filename_component(dir "${file}" DIRECTORY)
  string(REGEX MATCHALL "\\]\\([^) ]+\\)" links "${text}")
  # Brackets would group list elements: keep only the targets.
  string(REPLACE "](" "" targets "${links}")
  string(REPLACE ")" "" targets "${targets}")
  set(found ${${problems_var}})
  foreach(target IN LISTS targets)
    string(REGEX REPLACE "#.*$" "" target "${target}")
    if(target STREQUAL "" OR target MATCHES "^[a-zA-Z][a-zA-Z+.-]*:")
      continue()
    endif()
    get_filename_component(resolved "${target}" ABSOLUTE BASE_DIR "${dir}")
    string(FIND "${resolved}/" "${ROOT}/" at)
    if(NOT at EQUAL 0)
      list(APPEND found "${file}: link '${target}' points outside the repository")
    elseif(NOT EXISTS "${resolved}")
      list(APPEND found "${file}: link '${target}' names no file")
    endif()
  endforeach()
  set(${problems_var} ${found} PARENT_SCOPE)
endfunction()

# Appends to the list `problems_var` names each citation in `file` of a missing architecture section or of the
# design page outside the repository.
function(check_citations file sections problems_var)
  file(READ "${file}" text)
  set(found ${${problems_var}})
  string(REGEX MATCHALL "architecture\\.md §[0-9]+(, §[0-9]+)*" citations "${text}")
  foreach(citation IN LISTS citations)
    string(REGEX MATCHALL "§[0-9]+" numbers "${citation}")
    foreach(number IN LISTS numbers)
      string(REGEX REPLACE "^[^0-9]+" "" digits "${number}")
      if(NOT digits IN_LIST sections)
        list(APPEND found "${file}: cites docs/architecture.md §${digits}, which has no section ${digits}")
      endif()
    endforeach()
  endforeach()
  if(text MATCHES "ARCHITECTURE §[0-9]" OR text MATCHES "\\.\\./shared/")
    list(APPEND found "${file}: cites the design page outside the repository (use docs/architecture.md)")
  endif()
  set(${problems_var} ${found} PARENT_SCOPE)
endfunction()

checked_files(files)
architecture_sections(sections)
set(problems "")
foreach(file IN LISTS files)
  if(file MATCHES "\\.md$")
    check_links("${file}" problems)
  endif()
  if(NOT file MATCHES "/cmake/CheckDocLinks\\.cmake$" AND NOT file MATCHES "/tests/cmake/check_doc_links_test\\.cmake$")
    check_citations("${file}" "${sections}" problems)
  endif()
endforeach()

list(LENGTH files checked)
if(problems)
  foreach(problem IN LISTS problems)
    message("${problem}")
  endforeach()
  list(LENGTH problems count)
  message(FATAL_ERROR "docs: ${count} problem(s) in ${checked} files")
endif()
message(STATUS "docs: ${checked} files, every link and architecture citation resolves")
