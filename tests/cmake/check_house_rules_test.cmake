# Proves cmake/CheckHouseRules.cmake can fail: on synthetic trees under WORK_DIR it must flag an
# upward include with its file:line and the rule broken, a stale exception, and (with the real
# rules) a train/ source including pipeline/; and pass a clean tree and an allowed exception.
#
#   cmake -DCHECKER=<CheckHouseRules.cmake> -DREAL_RULES=<RoboloopHouseRules.cmake>
#         -DWORK_DIR=<scratch folder> -P check_house_rules_test.cmake

cmake_minimum_required(VERSION 3.20)

set(tree "${WORK_DIR}/tree")
set(rules "${WORK_DIR}/rules.cmake")
include("${CMAKE_CURRENT_LIST_DIR}/checker_test_support.cmake")

# Runs the checker on `tree` with `rules_file` and judges its verdict (see judge_checker_run).
function(expect_checker case rules_file expect_pass expected_text)
  execute_process(COMMAND "${CMAKE_COMMAND}" -DROOT=${tree} -DRULES=${rules_file} -P "${CHECKER}"
    RESULT_VARIABLE rc OUTPUT_VARIABLE stdout ERROR_VARIABLE stderr)
  judge_checker_run("${case}" "${rc}" "${stdout}${stderr}" "${expect_pass}" "${expected_text}")
endfunction()

file(REMOVE_RECURSE "${WORK_DIR}")
file(WRITE "${tree}/common/status.h" "#pragma once\n#include <string>\n")
file(WRITE "${tree}/pipeline/cli.h" "#pragma once\n#include \"common/status.h\"\n")
file(WRITE "${rules}" "roboloop_house_rule(FOLDER common MAY_INCLUDE)\n"
  "roboloop_house_rule(FOLDER pipeline MAY_INCLUDE common)\n")
expect_checker("clean tree passes" "${rules}" TRUE "")

file(WRITE "${tree}/common/upward.cc"
  "// a common source that knows the CLI\n#include \"common/status.h\"\n  #  include \"pipeline/cli.h\"\n")
expect_checker("upward include fails with file:line and rule" "${rules}" FALSE
  "common/upward.cc:3: includes \"pipeline/cli.h\", but common/ may include only no other folder")

file(APPEND "${rules}" "roboloop_house_rule_exception(NAME common-knows-cli FOLDER common "
  "HEADER pipeline/cli.h REASON \"synthetic\")\n")
expect_checker("named exception allows the include" "${rules}" TRUE "")

file(REMOVE "${tree}/common/upward.cc")
expect_checker("stale exception fails" "${rules}" FALSE "exception 'common-knows-cli'")

file(WRITE "${tree}/train/loop.cc" "#include \"pipeline/cli.h\"\n")
expect_checker("real rules forbid train including pipeline" "${REAL_RULES}" FALSE
  "train/loop.cc:1: includes \"pipeline/cli.h\", but train/ may include only")

file(REMOVE_RECURSE "${WORK_DIR}")
fail_if_checker_cases_failed("house-rules")
