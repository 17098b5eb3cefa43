# SPDX-License-Identifier: ISC
#
# libvirt integration. libxml2 is required: the metadata and status-file
# parser (vcpusched/libvirt/libvirt_meta.c) is shared by the daemon and the hook,
# which never link libvirt. The daemon's watcher (vcpusched/libvirt/libvirt_watch.c:
# metadata and lifecycle events, reconnects) needs libvirt.pc:
# VCPUSCHED_LIBVIRT=AUTO builds it when libvirt is found and otherwise
# builds libvirt_watch_none.c, whose watcher says it is not built in; ON makes a
# missing libvirt an error; OFF never builds it.
set(VCPUSCHED_LIBVIRT AUTO CACHE STRING "Build the daemon's libvirt watcher: AUTO, ON or OFF")
set_property(CACHE VCPUSCHED_LIBVIRT PROPERTY STRINGS AUTO ON OFF)

pkg_check_modules(LIBXML2 REQUIRED IMPORTED_TARGET GLOBAL libxml-2.0)

# Add the watcher (or its stub) to target (call from vcpusched/CMakeLists.txt).
function(vcpusched_libvirt_sources target)
    if(NOT VCPUSCHED_LIBVIRT STREQUAL "OFF")
        pkg_check_modules(LIBVIRT IMPORTED_TARGET GLOBAL libvirt)
    endif()
    if(VCPUSCHED_LIBVIRT STREQUAL "ON" AND NOT LIBVIRT_FOUND)
        message(FATAL_ERROR "VCPUSCHED_LIBVIRT=ON but libvirt.pc was not found (libvirt-dev)")
    endif()
    if(NOT LIBVIRT_FOUND)
        message(STATUS "libvirt watcher: off (VCPUSCHED_LIBVIRT=${VCPUSCHED_LIBVIRT})")
        target_sources(${target} PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/libvirt_watch_none.c)
        return()
    endif()
    message(STATUS "libvirt watcher: on (libvirt ${LIBVIRT_VERSION})")
    target_sources(${target} PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/libvirt_watch.c)
    target_link_libraries(${target} PRIVATE PkgConfig::LIBVIRT)
endfunction()
