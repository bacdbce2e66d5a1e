# Shared by the tests that prove a cmake/ checker can fail: judges one run of a checker and
# counts the failed cases in the global property CHECKER_TEST_FAILURES.
#
#   include("${CMAKE_CURRENT_LIST_DIR}/checker_test_support.cmake")

set_property(GLOBAL PROPERTY CHECKER_TEST_FAILURES 0)

# Counts a failure (and prints the checker's output) unless the run that exited with `rc` and
# printed `text` matches `expect_pass` and, when `expected_text` is not empty, contains it.
function(judge_checker_run case rc text expect_pass expected_text)
  set(ok TRUE)
  if(expect_pass AND NOT rc EQUAL 0)
    set(ok FALSE)
  elseif(NOT expect_pass AND rc EQUAL 0)
    set(ok FALSE)
  endif()
  if(expected_text)
    string(FIND "${text}" "${expected_text}" at)
    if(at EQUAL -1)
      set(ok FALSE)
    endif()
  endif()
  if(NOT ok)
    message(NOTICE "FAILED ${case}: exit ${rc}, expected ${expect_pass} and '${expected_text}'; "
      "output:\n${text}")
    get_property(count GLOBAL PROPERTY CHECKER_TEST_FAILURES)
    math(EXPR count "${count} + 1")
    set_property(GLOBAL PROPERTY CHECKER_TEST_FAILURES ${count})
  endif()
endfunction()

# Ends the script with an error naming `checker` when any judged case failed.
function(fail_if_checker_cases_failed checker)
  get_property(count GLOBAL PROPERTY CHECKER_TEST_FAILURES)
  if(count GREATER 0)
    message(FATAL_ERROR "${count} ${checker} checker case(s) failed")
  endif()
endfunction()
