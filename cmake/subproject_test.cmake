# ctest `consumer_subproject` (registered by tests/CMakeLists.txt); run as
#   cmake -DTOKENLEASE_SOURCE_DIR=... -DTOKENLEASE_BINARY_DIR=... \
#         -DTOKENLEASE_CXX_COMPILER=... -DTOKENLEASE_GENERATOR=... \
#         [-DTOKENLEASE_MAKE_PROGRAM=...] -P cmake/subproject_test.cmake
#
# 1. configures tests/consumer/subproject/ with add_subdirectory (configure
#    only: it checks that no test, benchmark, tool or install rule of
#    tokenlease is defined);
# 2. configures, builds and runs it with FetchContent: the `consumer` and
#    `local_consumer` programs, each exiting 0 only if the README's example
#    allows 5 of 6 requests, then installs it into an empty prefix, which
#    must stay empty (no install rule of tokenlease's came with it).
# Any failing step fails the test.
cmake_minimum_required(VERSION 3.25)

set(script_test_name consumer_subproject)
include("${CMAKE_CURRENT_LIST_DIR}/script_test.cmake")
require_script_args(TOKENLEASE_SOURCE_DIR TOKENLEASE_BINARY_DIR
                    TOKENLEASE_CXX_COMPILER TOKENLEASE_GENERATOR)

set(work "${TOKENLEASE_BINARY_DIR}/consumer_subproject")
set(src "${TOKENLEASE_SOURCE_DIR}/tests/consumer/subproject")

build_tool_args(configure_args)
list(APPEND configure_args
  "-DTOKENLEASE_SOURCE_DIR=${TOKENLEASE_SOURCE_DIR}"
  # Fast to build: the test is about the CMake interface, not the code.
  -DCMAKE_BUILD_TYPE=Debug "-DCMAKE_CXX_FLAGS_DEBUG=-O0")

file(REMOVE_RECURSE "${work}")
step("configure with add_subdirectory"
  "${CMAKE_COMMAND}" -S "${src}" -B "${work}/subdirectory" ${configure_args}
  -DTOKENLEASE_VIA=subdirectory)
step("configure with FetchContent"
  "${CMAKE_COMMAND}" -S "${src}" -B "${work}/fetchcontent" ${configure_args}
  -DTOKENLEASE_VIA=fetchcontent)
step("build" "${CMAKE_COMMAND}" --build "${work}/fetchcontent" -j2)
step("run consumer" "${work}/fetchcontent/consumer")
step("run local_consumer" "${work}/fetchcontent/local_consumer")
# No install rule of tokenlease's comes with it: installing the consumer
# (which has none of its own) puts nothing in the prefix.
step("install" "${CMAKE_COMMAND}" --install "${work}/fetchcontent"
  --prefix "${work}/prefix")
file(GLOB_RECURSE installed "${work}/prefix/*")
if(installed)
  message(FATAL_ERROR "consumer_subproject: installing the consumer "
                      "installed tokenlease files: ${installed}")
endif()
