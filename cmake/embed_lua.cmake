# Assembles the Lua scripts from their main file and the shared parts in
# lua/lib/, writes each assembled script and its SHA1 (the name EVALSHA uses)
# to files, and a C++ header embedding both. Run at build time by the custom
# command of lua/CMakeLists.txt, so editing any lua/ file re-runs it.
#   cmake -DOUTPUT=<header> -DLUA_OUT_DIR=<dir>
#         -DSCRIPTS="<name>=<main .lua>|..." -P embed_lua.cmake
# For every <name>=<dir>/<file>.lua it writes
#   <LUA_OUT_DIR>/<file>.lua        the assembled script: the exact bytes
#                                   Redis runs and hashes
#   <LUA_OUT_DIR>/<file>.lua.sha1   its SHA1, 40 hex digits and a newline
# and in <OUTPUT> k<name>Script and k<name>Sha1 (tokenlease::internal::lua).
#
# Assembly: a line that is only `--@include <path>` or
# `--@include <path> <part>` (after any indentation) is replaced by that file,
# or by that part of it, with the line's indentation added to each non-empty
# line; included text is assembled in turn (up to 8 levels). <path> is
# relative to the main file's directory (lua/). A file with parts has a
# header (up to its first `--@part` line, documentation only, not included)
# and parts, each from a line `--@part <part>` to the next such line or the
# end of the file, trailing blank lines dropped. Everything else is copied
# byte for byte: the markers are the only lines that do not reach Redis; the
# parts' comments do (they cost nothing per call: Redis compiles a script
# once and caches it). No line of an assembled script may start with `--@`,
# so a misspelt marker fails the build instead of being silently copied.

cmake_minimum_required(VERSION 3.25)  # the policies of the project

# Sets ${out} to the text `--@include ${file} ${part}` stands for (part
# empty: the whole file), not yet assembled.
function(_tokenlease_lua_part root file part out)
  set(path "${root}/${file}")
  if(NOT EXISTS "${path}")
    message(FATAL_ERROR "embed_lua: ${path} (--@include ${file}) not found")
  endif()
  file(READ "${path}" text)
  string(FIND "\n${text}" "\n--@part " first_part)
  if(part STREQUAL "")
    if(NOT first_part EQUAL -1)
      message(FATAL_ERROR
        "embed_lua: ${file} has parts; include one: --@include ${file} <part>")
    endif()
    set(${out} "${text}" PARENT_SCOPE)
    return()
  endif()
  string(FIND "\n${text}" "\n--@part ${part}\n" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "embed_lua: ${file} has no line '--@part ${part}'")
  endif()
  string(LENGTH "--@part ${part}\n" marker_len)
  math(EXPR begin "${at} + ${marker_len}")
  string(SUBSTRING "${text}" ${begin} -1 text)
  string(FIND "\n${text}" "\n--@part " next)
  if(NOT next EQUAL -1)
    string(SUBSTRING "${text}" 0 ${next} text)
  endif()
  string(REGEX REPLACE "\n+$" "\n" text "${text}")
  set(${out} "${text}" PARENT_SCOPE)
endfunction()

# Sets ${out} to ${text} with its --@include lines replaced.
function(_tokenlease_lua_assemble root text depth what out)
  if(depth GREATER 8)
    message(FATAL_ERROR "embed_lua: --@include nested too deep in ${what}")
  endif()
  set(result "")
  while(TRUE)
    string(FIND "${text}" "--@include" at)
    if(at EQUAL -1)
      break()
    endif()
    # [line_start, at) is what precedes it on its line.
    string(SUBSTRING "${text}" 0 ${at} before)
    string(FIND "${before}" "\n" newline REVERSE)
    math(EXPR line_start "${newline} + 1")
    math(EXPR indent_len "${at} - ${line_start}")
    string(SUBSTRING "${text}" ${line_start} ${indent_len} indent)
    string(SUBSTRING "${text}" ${at} -1 rest)
    string(FIND "${rest}" "\n" eol)
    if(eol EQUAL -1)
      set(line "${rest}")
      set(rest "")
      set(line_end "")
    else()
      string(SUBSTRING "${rest}" 0 ${eol} line)
      math(EXPR after "${eol} + 1")
      string(SUBSTRING "${rest}" ${after} -1 rest)
      set(line_end "\n")
    endif()
    string(SUBSTRING "${text}" 0 ${line_start} head)
    if(NOT indent MATCHES "^ *$")
      # Not at the start of its line (a comment that mentions it): text.
      string(APPEND result "${head}${indent}${line}${line_end}")
      set(text "${rest}")
      continue()
    endif()
    if(NOT line MATCHES "^--@include ([A-Za-z0-9_./-]+)( ([A-Za-z0-9_]+))?$")
      message(FATAL_ERROR "embed_lua: bad marker in ${what}: '${line}'; "
                          "expected '--@include <path> [<part>]'")
    endif()
    set(file "${CMAKE_MATCH_1}")
    set(part "${CMAKE_MATCH_3}")
    _tokenlease_lua_part("${root}" "${file}" "${part}" piece)
    math(EXPR inner "${depth} + 1")
    _tokenlease_lua_assemble("${root}" "${piece}" ${inner}
                             "${file} ${part}" piece)
    if(NOT indent STREQUAL "")
      string(REGEX REPLACE "\n([^\n])" "\n${indent}\\1" piece "\n${piece}")
      string(SUBSTRING "${piece}" 1 -1 piece)
    endif()
    string(APPEND result "${head}${piece}")
    set(text "${rest}")
  endwhile()
  string(APPEND result "${text}")
  set(${out} "${result}" PARENT_SCOPE)
endfunction()

# Writes ${content} to ${path} only if it differs (no needless rebuilds).
function(_tokenlease_write_if_changed path content)
  if(EXISTS "${path}")
    file(READ "${path}" old)
    if(old STREQUAL content)
      return()
    endif()
  endif()
  file(WRITE "${path}.tmp" "${content}")
  file(RENAME "${path}.tmp" "${path}")
endfunction()

set(content "// Generated from lua/ by cmake/embed_lua.cmake; do not edit.\n")
string(APPEND content "#ifndef TOKENLEASE_GENERATED_LUA_SCRIPTS_H_\n")
string(APPEND content "#define TOKENLEASE_GENERATED_LUA_SCRIPTS_H_\n\n")
string(APPEND content "#include <string_view>\n\n")
string(APPEND content "namespace tokenlease::internal::lua {\n\n")
file(MAKE_DIRECTORY "${LUA_OUT_DIR}")
string(REPLACE "|" ";" script_list "${SCRIPTS}")
foreach(entry IN LISTS script_list)
  string(REPLACE "=" ";" parts "${entry}")
  list(GET parts 0 name)
  list(GET parts 1 path)
  get_filename_component(root "${path}" DIRECTORY)
  get_filename_component(file_name "${path}" NAME)
  file(READ "${path}" main)
  _tokenlease_lua_assemble("${root}" "${main}" 0 "${file_name}" body)
  if("\n${body}" MATCHES "\n *--@")
    message(FATAL_ERROR "embed_lua: assembled ${file_name} still has a line "
                        "starting with '--@' (a misspelt marker?)")
  endif()
  string(SHA1 digest "${body}")
  string(FIND "${body}" ")tokenlease_lua\"" clash)
  if(NOT clash EQUAL -1)
    message(FATAL_ERROR "${path} contains the raw-string delimiter")
  endif()
  _tokenlease_write_if_changed("${LUA_OUT_DIR}/${file_name}" "${body}")
  _tokenlease_write_if_changed("${LUA_OUT_DIR}/${file_name}.sha1"
                               "${digest}\n")
  string(APPEND content "inline constexpr std::string_view k${name}Script = R\"tokenlease_lua(${body})tokenlease_lua\";\n")
  string(APPEND content "inline constexpr std::string_view k${name}Sha1 = \"${digest}\";\n\n")
endforeach()
string(APPEND content "}  // namespace tokenlease::internal::lua\n\n")
string(APPEND content "#endif  // TOKENLEASE_GENERATED_LUA_SCRIPTS_H_\n")
_tokenlease_write_if_changed("${OUTPUT}" "${content}")
