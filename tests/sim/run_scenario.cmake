# SPDX-License-Identifier: ISC
# Run vcpusched-sim on one scenario (ctest sim.*): it must exit 0 (every
# `expect` held, no contract violation) and print a report with shares.
execute_process(COMMAND ${TOOL} ${SCENARIO}
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}${err}")
if(NOT rc EQUAL 0)
    message(FATAL_ERROR "vcpusched-sim ${SCENARIO}: exit status ${rc}")
endif()
if(NOT out MATCHES "\n[^ \n]+ +[0-9]+\\.[0-9][0-9]% ")
    message(FATAL_ERROR "vcpusched-sim ${SCENARIO}: no share line in the report")
endif()
