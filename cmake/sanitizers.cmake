# Sanitizers as build options (as libuv does). CI runs the whole test
# suite once more with VCPUSCHED_SANITIZE=ON (ASan + UBSan, no recovery).
if(VCPUSCHED_SANITIZE)
    set(_san -fsanitize=address,undefined -fno-sanitize-recover=all
             -fno-omit-frame-pointer)
    add_compile_options(${_san})
    add_link_options(${_san})
    # Their shadow memory is terabytes of reservations: never mlockall it.
    add_compile_definitions(VCPUSCHED_SANITIZED=1)
endif()
if(VCPUSCHED_TSAN)
    if(VCPUSCHED_SANITIZE)
        message(FATAL_ERROR "VCPUSCHED_TSAN and VCPUSCHED_SANITIZE are exclusive")
    endif()
    add_compile_options(-fsanitize=thread -fno-omit-frame-pointer)
    add_link_options(-fsanitize=thread)
    add_compile_definitions(VCPUSCHED_SANITIZED=1)
endif()
