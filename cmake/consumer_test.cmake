# ctest `consumer_package` (registered by cmake/install.cmake); run as
#   cmake -DTOKENLEASE_SOURCE_DIR=... -DTOKENLEASE_BINARY_DIR=... \
#         -DTOKENLEASE_LIBDIR=... -DTOKENLEASE_CXX_COMPILER=... \
#         -DTOKENLEASE_GENERATOR=... [-DTOKENLEASE_MAKE_PROGRAM=...] \
#         [-DTOKENLEASE_BUILD_TYPE=...] -DTOKENLEASE_PKG_CONFIG=... \
#         -P cmake/consumer_test.cmake
#
# 1. installs the already-built tree into <build>/consumer_package/prefix;
# 2. configures, builds and runs tests/consumer/ (find_package(tokenlease),
#    both components, the direct and leased examples compiled);
# 3. configures, builds and runs tests/consumer/local/ (COMPONENTS local)
#    with pkg-config unable to see hiredis and libevent, and checks that its
#    compile and link commands name neither;
# 4. compiles tests/consumer/pkgconfig_main.cc with
#    `pkg-config --cflags --libs tokenlease-local` (resolved without the
#    hiredis and libevent modules, and naming neither) and with
#    `... tokenlease`, and runs both.
# Any failing step fails the test.
cmake_minimum_required(VERSION 3.25)

set(script_test_name consumer_package)
include("${CMAKE_CURRENT_LIST_DIR}/script_test.cmake")
require_script_args(TOKENLEASE_SOURCE_DIR TOKENLEASE_BINARY_DIR
                    TOKENLEASE_LIBDIR TOKENLEASE_CXX_COMPILER
                    TOKENLEASE_GENERATOR TOKENLEASE_PKG_CONFIG)

set(work "${TOKENLEASE_BINARY_DIR}/consumer_package")
set(prefix "${work}/prefix")
set(consumer_src "${TOKENLEASE_SOURCE_DIR}/tests/consumer")
if(IS_ABSOLUTE "${TOKENLEASE_LIBDIR}")
  message(FATAL_ERROR "consumer_test.cmake: CMAKE_INSTALL_LIBDIR "
                      "'${TOKENLEASE_LIBDIR}' is absolute; cannot install "
                      "into a temporary prefix")
endif()
set(libdir "${prefix}/${TOKENLEASE_LIBDIR}")

# Fails if `text` (commands or flags of the local-only consumer) names
# hiredis or libevent: tokenlease::local must need neither.
function(expect_local_only what text)
  string(TOLOWER "${text}" lower)
  if(lower MATCHES "hiredis|libevent|-levent")
    message(FATAL_ERROR "consumer_package: ${what} of a local-only consumer "
                        "mentions hiredis or libevent:\n${text}")
  endif()
endfunction()

# Configures, builds and runs the consumer project in `src` (its program is
# `consumer`), checking that find_package used the fresh prefix.
function(build_consumer src build)
  build_tool_args(args)
  list(APPEND args
    -S "${src}" -B "${build}"
    "-DCMAKE_PREFIX_PATH=${prefix}"
    # Only the fresh prefix may satisfy find_package(tokenlease).
    -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF)
  if(TOKENLEASE_BUILD_TYPE)
    list(APPEND args "-DCMAKE_BUILD_TYPE=${TOKENLEASE_BUILD_TYPE}")
  endif()
  step("configure ${src}" "${CMAKE_COMMAND}" ${args})
  file(STRINGS "${build}/CMakeCache.txt" found_dir REGEX "^tokenlease_DIR:")
  string(REGEX REPLACE "^[^=]*=" "" found_dir "${found_dir}")
  file(REAL_PATH "${found_dir}" found_dir)
  file(REAL_PATH "${prefix}" real_prefix)
  string(FIND "${found_dir}" "${real_prefix}/" pos)
  if(NOT pos EQUAL 0)
    message(FATAL_ERROR "consumer_package: find_package(tokenlease) used "
                        "'${found_dir}', not the package in ${prefix}")
  endif()
  step("build ${src}" "${CMAKE_COMMAND}" --build "${build}")
  step("run ${build}/consumer" "${build}/consumer")
endfunction()

file(REMOVE_RECURSE "${work}")
file(MAKE_DIRECTORY "${work}")

# 1. Install.
step("install into ${prefix}"
  "${CMAKE_COMMAND}" --install "${TOKENLEASE_BINARY_DIR}" --prefix "${prefix}")

# 2. The full package.
build_consumer("${consumer_src}" "${work}/build")

# 3. The local-only user, on a machine without hiredis and libevent as far
# as pkg-config can tell: a pkg-config directory with every module of the
# system's except those.
set(no_redis_pc "${work}/pkgconfig-without-redis")
file(MAKE_DIRECTORY "${no_redis_pc}")
execute_process(
  COMMAND "${TOKENLEASE_PKG_CONFIG}" --variable pc_path pkg-config
  OUTPUT_VARIABLE pc_path OUTPUT_STRIP_TRAILING_WHITESPACE)
string(REPLACE ":" ";" pc_dirs "${pc_path}")
set(hidden 0)
foreach(dir IN LISTS pc_dirs)
  file(GLOB pcs "${dir}/*.pc")
  foreach(pc IN LISTS pcs)
    get_filename_component(name "${pc}" NAME)
    if(name MATCHES "^(hiredis|libevent)")
      math(EXPR hidden "${hidden} + 1")
    elseif(NOT EXISTS "${no_redis_pc}/${name}")
      file(CREATE_LINK "${pc}" "${no_redis_pc}/${name}" SYMBOLIC)
    endif()
  endforeach()
endforeach()
if(hidden EQUAL 0)
  message(FATAL_ERROR "consumer_package: found no hiredis or libevent .pc "
                      "file to hide in ${pc_path}")
endif()
set(ENV{PKG_CONFIG_LIBDIR} "${no_redis_pc}")
execute_process(COMMAND "${TOKENLEASE_PKG_CONFIG}" --exists hiredis
                RESULT_VARIABLE rc)
if(rc EQUAL 0)
  message(FATAL_ERROR "consumer_package: hiding hiredis from pkg-config "
                      "did not work")
endif()
set(local_build "${work}/build-local")
build_consumer("${consumer_src}/local" "${local_build}")

if(TOKENLEASE_GENERATOR MATCHES "Ninja")
  set(ninja "${TOKENLEASE_MAKE_PROGRAM}")
  if(NOT ninja)
    set(ninja ninja)
  endif()
  execute_process(
    COMMAND "${ninja}" -C "${local_build}" -t commands consumer
    RESULT_VARIABLE rc
    OUTPUT_VARIABLE consumer_commands)
  if(NOT rc EQUAL 0 OR consumer_commands STREQUAL "")
    message(FATAL_ERROR "consumer_package: cannot list the commands of "
                        "`consumer` (${rc})")
  endif()
else()
  file(GLOB_RECURSE command_files
       "${local_build}/CMakeFiles/consumer.dir/flags.make"
       "${local_build}/CMakeFiles/consumer.dir/link.txt")
  if(NOT command_files)
    message(FATAL_ERROR "consumer_package: no flags.make/link.txt for "
                        "`consumer` with generator ${TOKENLEASE_GENERATOR}")
  endif()
  set(consumer_commands "")
  foreach(f IN LISTS command_files)
    file(READ "${f}" text)
    string(APPEND consumer_commands "${text}")
  endforeach()
endif()
expect_local_only("the compile and link commands" "${consumer_commands}")
message(STATUS "consumer_package: tokenlease::local consumer: no hiredis or "
               "libevent on its command lines")

# 4. pkg-config consumers: the same program against each .pc file (the
# local one still without hiredis and libevent visible).
# LD_LIBRARY_PATH only matters if the libraries are shared.
set(ENV{LD_LIBRARY_PATH} "${libdir}:$ENV{LD_LIBRARY_PATH}")
foreach(module IN ITEMS tokenlease-local tokenlease)
  if(module STREQUAL "tokenlease-local")
    set(ENV{PKG_CONFIG_LIBDIR} "${no_redis_pc}")
  else()
    unset(ENV{PKG_CONFIG_LIBDIR})
  endif()
  set(ENV{PKG_CONFIG_PATH} "${libdir}/pkgconfig")
  execute_process(
    COMMAND "${TOKENLEASE_PKG_CONFIG}" --cflags --libs ${module}
    RESULT_VARIABLE rc
    OUTPUT_VARIABLE pc_flags
    ERROR_VARIABLE pc_error
    OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "consumer_package: pkg-config --cflags --libs "
                        "${module} failed (${rc}): ${pc_error}")
  endif()
  message(STATUS "consumer_package: pkg-config ${module}: ${pc_flags}")
  if(NOT pc_flags MATCHES "-I${prefix}/")
    message(FATAL_ERROR "consumer_package: ${module}.pc does not point into "
                        "${prefix}: ${pc_flags}")
  endif()
  if(module STREQUAL "tokenlease-local")
    expect_local_only("pkg-config --cflags --libs tokenlease-local"
                      "${pc_flags}")
  endif()
  separate_arguments(pc_flags UNIX_COMMAND "${pc_flags}")
  step("compile pkgconfig_main.cc with ${module}'s flags"
    "${TOKENLEASE_CXX_COMPILER}" -std=c++20
    "${consumer_src}/pkgconfig_main.cc" ${pc_flags}
    -o "${work}/pkgconfig_${module}")
  step("run pkgconfig_${module}" "${work}/pkgconfig_${module}")
endforeach()

message(STATUS "consumer_package: OK")
