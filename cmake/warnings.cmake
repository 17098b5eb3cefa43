# Warnings: the OpenBSD set plus -Wextra -Wformat=2. CI adds -Werror
# (VCPUSCHED_WERROR=ON); user builds do not, so a newer compiler's new
# warning never breaks someone's install.
set(VCPUSCHED_WARNINGS
    -Wall -Wextra -Wformat=2 -Wstrict-prototypes -Wmissing-prototypes
    -Wmissing-declarations -Wshadow -Wpointer-arith -Wcast-qual
    -Wsign-compare -Wundef -Wvla -Wnull-dereference -Wimplicit-fallthrough)
if(CMAKE_C_COMPILER_ID STREQUAL "GNU")
    # -Wno-format-truncation: error messages are deliberately cut to the
    # caller's fixed errbuf with snprintf; GCC flags every such call.
    list(APPEND VCPUSCHED_WARNINGS -Wduplicated-cond -Wlogical-op -Wno-format-truncation)
endif()
if(VCPUSCHED_WERROR)
    list(APPEND VCPUSCHED_WARNINGS -Werror)
endif()

# Apply to a target we own (never to third-party or generated code).
function(vcpusched_target_warnings target)
    target_compile_options(${target} PRIVATE ${VCPUSCHED_WARNINGS})
endfunction()
