# SPDX-License-Identifier: ISC
# Run vcpusched-sim on one scenario (ctest sim.*). A good scenario must
# exit 0 (every `expect` held, no contract violation) and print a report
# with shares. A bad one (tests/sim/bad) starts with "# error: REGEX" and
# must exit 1 with a matching "file:line: message" on stderr.
execute_process(COMMAND ${TOOL} ${SCENARIO}
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}${err}")
file(STRINGS ${SCENARIO} first LIMIT_COUNT 1)
if(first MATCHES "^# error: (.*)$")
    set(want "${CMAKE_MATCH_1}")
    if(rc EQUAL 0)
        message(FATAL_ERROR "vcpusched-sim ${SCENARIO}: accepted a bad scenario")
    endif()
    if(NOT err MATCHES "${want}")
        message(FATAL_ERROR "vcpusched-sim ${SCENARIO}: error does not match '${want}'")
    endif()
    return()
endif()
if(NOT rc EQUAL 0)
    message(FATAL_ERROR "vcpusched-sim ${SCENARIO}: exit status ${rc}")
endif()
if(NOT out MATCHES "\n[^ \n]+ +[0-9]+\\.[0-9][0-9]% ")
    message(FATAL_ERROR "vcpusched-sim ${SCENARIO}: no share line in the report")
endif()
