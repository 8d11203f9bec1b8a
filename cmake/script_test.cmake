# What the ctest scripts run with `cmake -P` share (cmake/consumer_test.cmake,
# cmake/subproject_test.cmake): checking their -D arguments and running
# steps that fail the test. Set `script_test_name` (the ctest name, which
# every message starts with) before include()-ing this file.
if(NOT script_test_name)
  message(FATAL_ERROR "script_test.cmake: set script_test_name first")
endif()

# Fails unless every variable named is given (-D<var>=...) and not empty.
function(require_script_args)
  get_filename_component(script "${CMAKE_SCRIPT_MODE_FILE}" NAME)
  foreach(var IN LISTS ARGN)
    if(NOT DEFINED ${var} OR "${${var}}" STREQUAL "")
      message(FATAL_ERROR "${script}: -D${var}=... is required")
    endif()
  endforeach()
endfunction()

# Runs one step; stops the test with a message if it fails.
function(step name)
  message(STATUS "${script_test_name}: ${name}")
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${script_test_name}: step '${name}' failed (${rc}): "
                        "${ARGN}")
  endif()
endfunction()

# Sets `out` to the arguments that configure a project with the build's
# generator, make program and compiler (TOKENLEASE_GENERATOR,
# TOKENLEASE_MAKE_PROGRAM if given, TOKENLEASE_CXX_COMPILER).
function(build_tool_args out)
  set(args
    -G "${TOKENLEASE_GENERATOR}"
    "-DCMAKE_CXX_COMPILER=${TOKENLEASE_CXX_COMPILER}")
  if(TOKENLEASE_MAKE_PROGRAM)
    list(APPEND args "-DCMAKE_MAKE_PROGRAM=${TOKENLEASE_MAKE_PROGRAM}")
  endif()
  set(${out} ${args} PARENT_SCOPE)
endfunction()
