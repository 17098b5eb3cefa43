# SPDX-License-Identifier: ISC
#
# The event source (vcpusched/events*.c) and its BPF program
# (vcpusched/bpf/vcpusched.bpf.c). The program is built with clang,
# against a vmlinux.h that bpftool dumps from the kernel's BTF, and
# embedded in the daemon as a bpftool skeleton. VCPUSCHED_BPF=AUTO builds
# it when clang, bpftool, libbpf and the BTF file are all there and
# otherwise builds events_nobpf.c, with which events_open(AUTO) falls back
# to /proc and says why; ON makes a missing piece an error; OFF never
# builds it.
set(VCPUSCHED_BPF AUTO CACHE STRING "Build the BPF event source: AUTO, ON or OFF")
set_property(CACHE VCPUSCHED_BPF PROPERTY STRINGS AUTO ON OFF)
set(VCPUSCHED_VMLINUX_BTF /sys/kernel/btf/vmlinux CACHE FILEPATH
    "Kernel BTF that vmlinux.h is generated from")

# Which pieces are missing (empty: all there).
function(vcpusched_bpf_probe out)
    set(missing)
    find_program(VCPUSCHED_CLANG NAMES clang clang-16 clang-15 clang-14)
    find_program(VCPUSCHED_BPFTOOL NAMES bpftool PATHS /usr/sbin /sbin /usr/local/sbin)
    pkg_check_modules(LIBBPF IMPORTED_TARGET GLOBAL libbpf)
    if(NOT VCPUSCHED_CLANG)
        list(APPEND missing clang)
    endif()
    if(NOT VCPUSCHED_BPFTOOL)
        list(APPEND missing bpftool)
    endif()
    if(NOT LIBBPF_FOUND)
        list(APPEND missing libbpf)
    endif()
    if(NOT EXISTS ${VCPUSCHED_VMLINUX_BTF})
        list(APPEND missing ${VCPUSCHED_VMLINUX_BTF})
    endif()
    set(${out} "${missing}" PARENT_SCOPE)
endfunction()

# vmlinux.h -> vcpusched.bpf.o -> vcpusched.skel.h, in ${dir}.
function(vcpusched_bpf_skeleton dir)
    set(src ${CMAKE_CURRENT_SOURCE_DIR}/bpf/vcpusched.bpf.c)
    if(CMAKE_SYSTEM_PROCESSOR MATCHES "x86_64|AMD64|i.86")
        set(arch x86)
    elseif(CMAKE_SYSTEM_PROCESSOR MATCHES "aarch64|arm64")
        set(arch arm64)
    else()
        set(arch ${CMAKE_SYSTEM_PROCESSOR})
    endif()
    set(werror)
    if(VCPUSCHED_WERROR)
        set(werror -Werror)
    endif()
    add_custom_command(OUTPUT ${dir}/vmlinux.h
        COMMAND ${CMAKE_COMMAND} -E make_directory ${dir}
        COMMAND sh -c "'${VCPUSCHED_BPFTOOL}' btf dump file '${VCPUSCHED_VMLINUX_BTF}' format c > '${dir}/vmlinux.h.tmp'"
        COMMAND ${CMAKE_COMMAND} -E rename ${dir}/vmlinux.h.tmp ${dir}/vmlinux.h
        COMMENT "Generating vmlinux.h from ${VCPUSCHED_VMLINUX_BTF}"
        VERBATIM)
    add_custom_command(OUTPUT ${dir}/vcpusched.bpf.o
        COMMAND ${VCPUSCHED_CLANG} -O2 -g -target bpf -D__TARGET_ARCH_${arch}
                -Wall ${werror} -I${dir} -I${CMAKE_CURRENT_SOURCE_DIR}/bpf
                -c ${src} -o ${dir}/vcpusched.bpf.o
        DEPENDS ${src} ${CMAKE_CURRENT_SOURCE_DIR}/bpf/events_shared.h ${dir}/vmlinux.h
        COMMENT "Building BPF object vcpusched.bpf.o"
        VERBATIM)
    add_custom_command(OUTPUT ${dir}/vcpusched.skel.h
        COMMAND sh -c "'${VCPUSCHED_BPFTOOL}' gen skeleton '${dir}/vcpusched.bpf.o' > '${dir}/vcpusched.skel.h.tmp'"
        COMMAND ${CMAKE_COMMAND} -E rename ${dir}/vcpusched.skel.h.tmp ${dir}/vcpusched.skel.h
        DEPENDS ${dir}/vcpusched.bpf.o
        COMMENT "Generating BPF skeleton vcpusched.skel.h"
        VERBATIM)
endfunction()

# Add the event source to target (call from vcpusched/CMakeLists.txt).
function(vcpusched_events_sources target)
    set(missing)
    if(VCPUSCHED_BPF STREQUAL "OFF")
        set(missing "VCPUSCHED_BPF=OFF")
    else()
        vcpusched_bpf_probe(missing)
    endif()
    if(missing AND VCPUSCHED_BPF STREQUAL "ON")
        message(FATAL_ERROR "VCPUSCHED_BPF=ON but missing: ${missing}")
    endif()
    target_sources(${target} PRIVATE events.c events_proc.c)
    if(missing)
        message(STATUS "BPF event source: off (${missing}); events fall back to /proc")
        target_sources(${target} PRIVATE events_nobpf.c)
        return()
    endif()
    message(STATUS "BPF event source: on (${VCPUSCHED_CLANG}, ${VCPUSCHED_BPFTOOL})")
    set(dir ${CMAKE_CURRENT_BINARY_DIR}/bpf)
    vcpusched_bpf_skeleton(${dir})
    target_sources(${target} PRIVATE events_bpf.c ${dir}/vcpusched.skel.h)
    # The skeleton is generated code: SYSTEM keeps our warnings off it.
    target_include_directories(${target} SYSTEM PRIVATE ${dir})
    target_include_directories(${target} PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/bpf)
    target_link_libraries(${target} PUBLIC PkgConfig::LIBBPF)
endfunction()
