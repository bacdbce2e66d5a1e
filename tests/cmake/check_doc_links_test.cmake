# Proves cmake/CheckDocLinks.cmake can fail: on a synthetic tree under WORK_DIR it must flag a
# link to a missing file, a link that leaves the repository, a citation of a missing section of
# docs/architecture.md and a citation of the design page outside the repository; and pass the
# tree once they are fixed.
#
#   cmake -DCHECKER=<CheckDocLinks.cmake> -DWORK_DIR=<scratch folder> -P check_doc_links_test.cmake

cmake_minimum_required(VERSION 3.20)

set(tree "${WORK_DIR}/repo")
include("${CMAKE_CURRENT_LIST_DIR}/checker_test_support.cmake")

# Runs the checker on the tree and judges its verdict (see judge_checker_run).
function(expect_checker case expect_pass expected_text)
  execute_process(COMMAND "${CMAKE_COMMAND}" -DROOT=${tree} -P "${CHECKER}"
    RESULT_VARIABLE rc OUTPUT_VARIABLE stdout ERROR_VARIABLE stderr)
  judge_checker_run("${case}" "${rc}" "${stdout}${stderr}" "${expect_pass}" "${expected_text}")
endfunction()

file(REMOVE_RECURSE "${WORK_DIR}")
file(WRITE "${tree}/docs/architecture.md" "# Architecture\n\n## 1. Layout\n\n## 2. Data\n")
file(WRITE "${tree}/docs/guide.md" "See [the design](architecture.md#1-layout) and [home](../README.md).\n")
file(WRITE "${tree}/README.md" "Read [the guide](docs/guide.md) and <https://example.org>.\n")
file(WRITE "${tree}/sim/env.h" "// Episodes (docs/architecture.md §1, §2).\n#pragma once\n")
expect_checker("clean tree passes" TRUE "every link and architecture citation resolves")

file(WRITE "${tree}/docs/guide.md" "See [the design](architecture.md) and [gone](missing.md).\n")
expect_checker("missing link target fails" FALSE "docs/guide.md: link 'missing.md' names no file")

file(WRITE "${tree}/docs/guide.md" "See [the shared page](../../shared/ARCHITECTURE.md).\n")
expect_checker("link outside the repository fails" FALSE
  "link '../../shared/ARCHITECTURE.md' points outside the repository")

file(WRITE "${tree}/docs/guide.md" "See [the design](architecture.md).\n")
file(WRITE "${tree}/sim/env.h" "// Episodes (docs/architecture.md §1, §9).\n#pragma once\n")
expect_checker("missing section fails" FALSE "sim/env.h: cites docs/architecture.md §9, which has no section 9")

file(WRITE "${tree}/sim/env.h" "// Episodes (ARCHITECTURE §2).\n#pragma once\n")
expect_checker("outside design page fails" FALSE "sim/env.h: cites the design page outside the repository")

file(REMOVE_RECURSE "${WORK_DIR}")
fail_if_checker_cases_failed("doc-links")
