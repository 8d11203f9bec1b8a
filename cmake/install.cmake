# Installation and packaging of tokenlease; included at the end of the
# top-level CMakeLists.txt (after the `tokenlease` target and its links exist).
#
# Installs:
#   <libdir>/libtokenlease.{a,so}
#   <includedir>/tokenlease/*.h
#   <libdir>/cmake/tokenlease/tokenlease{Config,ConfigVersion,Targets*}.cmake
#       -> find_package(tokenlease CONFIG) + tokenlease::tokenlease
#   <libdir>/pkgconfig/tokenlease.pc
#       -> pkg-config --cflags --libs tokenlease
#
# The dependencies written into the package config and the .pc file are
# derived from the link libraries of the `tokenlease` target, so adding a
# dependency in CMakeLists.txt needs no change here. Understood link items:
#   absl::X          -> find_dependency(absl CONFIG); pkg-config module absl_X
#   PkgConfig::P     -> pkg_check_modules(P IMPORTED_TARGET ...) in the config;
#                       the modules of P in the .pc file (taken from the
#                       pkg_check_modules call, or from the variable
#                       TOKENLEASE_PC_MODULES_<P> if set)
#   Threads::Threads -> find_dependency(Threads); -pthread
#   plain names      -> -l<name> (e.g. `atomic`); "-..." flags as they are
#
# All install rules are in the component `tokenlease`, so
# `cmake --install build --component tokenlease` installs only the library.

include(CMakePackageConfigHelpers)

set(TOKENLEASE_INSTALL_CMAKEDIR "${CMAKE_INSTALL_LIBDIR}/cmake/tokenlease")
set(TOKENLEASE_INSTALL_PKGCONFIGDIR "${CMAKE_INSTALL_LIBDIR}/pkgconfig")

# --- Library, headers, exported targets ------------------------------------

install(TARGETS tokenlease
  EXPORT tokenleaseTargets
  ARCHIVE DESTINATION "${CMAKE_INSTALL_LIBDIR}" COMPONENT tokenlease
  LIBRARY DESTINATION "${CMAKE_INSTALL_LIBDIR}" COMPONENT tokenlease
  RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}" COMPONENT tokenlease)

install(DIRECTORY "${PROJECT_SOURCE_DIR}/include/tokenlease"
  DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}"
  COMPONENT tokenlease
  FILES_MATCHING PATTERN "*.h")

install(EXPORT tokenleaseTargets
  NAMESPACE tokenlease::
  FILE tokenleaseTargets.cmake
  DESTINATION "${TOKENLEASE_INSTALL_CMAKEDIR}"
  COMPONENT tokenlease)

# --- Dependencies, derived from the target's link libraries ----------------

# Returns in `out` the direct link items of `target` (`all`: PUBLIC+PRIVATE,
# `public`: PUBLIC/INTERFACE only), with $<LINK_ONLY:x> unwrapped.
function(_tokenlease_link_items target out_all out_public)
  get_target_property(all_items ${target} LINK_LIBRARIES)
  get_target_property(iface_items ${target} INTERFACE_LINK_LIBRARIES)
  if(NOT all_items)
    set(all_items "")
  endif()
  if(NOT iface_items)
    set(iface_items "")
  endif()
  set(public "")
  foreach(item IN LISTS iface_items)
    # A static library lists its PRIVATE deps as $<LINK_ONLY:x> here.
    if(NOT item MATCHES "^\\$<LINK_ONLY:")
      list(APPEND public "${item}")
    endif()
  endforeach()
  set(${out_all} "${all_items}" PARENT_SCOPE)
  set(${out_public} "${public}" PARENT_SCOPE)
endfunction()

# The pkg-config modules behind PkgConfig::<prefix>.
function(_tokenlease_pkgconfig_modules prefix out)
  if(DEFINED TOKENLEASE_PC_MODULES_${prefix})
    set(${out} "${TOKENLEASE_PC_MODULES_${prefix}}" PARENT_SCOPE)
    return()
  endif()
  # FindPkgConfig records the arguments of pkg_check_modules(<prefix> ...)
  # in this internal cache entry.
  set(args "${__pkg_config_arguments_${prefix}}")
  set(modules "")
  foreach(arg IN LISTS args)
    if(NOT arg MATCHES
       "^(REQUIRED|QUIET|NO_CMAKE_PATH|NO_CMAKE_ENVIRONMENT_PATH|IMPORTED_TARGET|GLOBAL)$")
      list(APPEND modules "${arg}")
    endif()
  endforeach()
  if(NOT modules)
    message(FATAL_ERROR
      "tokenlease links PkgConfig::${prefix} but cmake/install.cmake cannot "
      "tell which pkg-config modules it stands for; set "
      "TOKENLEASE_PC_MODULES_${prefix} to the module list.")
  endif()
  set(${out} "${modules}" PARENT_SCOPE)
endfunction()

_tokenlease_link_items(tokenlease _tl_all_items _tl_public_items)
get_target_property(_tl_type tokenlease TYPE)

set(_tl_pc_requires "")          # pkg-config modules, public
set(_tl_pc_requires_private "")  # pkg-config modules, private
set(_tl_pc_libs "")              # extra linker flags, public
set(_tl_pc_libs_private "")      # extra linker flags, private
set(_tl_need_threads FALSE)
set(_tl_pkgconfig_prefixes "")

foreach(_tl_item IN LISTS _tl_all_items)
  if(_tl_item MATCHES "^\\$<LINK_ONLY:(.*)>$")
    set(_tl_item "${CMAKE_MATCH_1}")
  endif()
  # A static library must bring all its dependencies to the consumer's link
  # line even without `pkg-config --static`; a shared one only the public.
  if(_tl_type STREQUAL "STATIC_LIBRARY" OR _tl_item IN_LIST _tl_public_items)
    set(_tl_suffix "")
  else()
    set(_tl_suffix "_private")
  endif()

  if(_tl_item MATCHES "\\$<")
    message(WARNING "cmake/install.cmake: link item '${_tl_item}' of "
                    "tokenlease is a generator expression; not written to "
                    "tokenlease.pc.")
  elseif(_tl_item MATCHES "^absl::(.+)$")
    set(_tl_module "absl_${CMAKE_MATCH_1}")
    execute_process(
      COMMAND "${PKG_CONFIG_EXECUTABLE}" --exists "${_tl_module}"
      RESULT_VARIABLE _tl_rc)
    if(_tl_rc EQUAL 0)
      list(APPEND _tl_pc_requires${_tl_suffix} "${_tl_module}")
    else()
      message(WARNING "cmake/install.cmake: no pkg-config module "
                      "${_tl_module} for ${_tl_item}; tokenlease.pc will "
                      "lack it.")
    endif()
  elseif(_tl_item MATCHES "^PkgConfig::(.+)$")
    set(_tl_prefix "${CMAKE_MATCH_1}")
    _tokenlease_pkgconfig_modules("${_tl_prefix}" _tl_modules)
    list(APPEND _tl_pc_requires${_tl_suffix} ${_tl_modules})
    list(APPEND _tl_pkgconfig_prefixes "${_tl_prefix}")
    set(_tl_modules_${_tl_prefix} "${_tl_modules}")
  elseif(_tl_item STREQUAL "Threads::Threads")
    set(_tl_need_threads TRUE)
    list(APPEND _tl_pc_libs${_tl_suffix} "-pthread")
  elseif(TARGET "${_tl_item}")
    message(WARNING "cmake/install.cmake: tokenlease links target "
                    "'${_tl_item}', which is neither absl::, PkgConfig:: nor "
                    "Threads::Threads; the installed package may not link.")
  elseif(_tl_item MATCHES "^-")
    list(APPEND _tl_pc_libs${_tl_suffix} "${_tl_item}")
  elseif(IS_ABSOLUTE "${_tl_item}")
    list(APPEND _tl_pc_libs${_tl_suffix} "${_tl_item}")
  else()
    list(APPEND _tl_pc_libs${_tl_suffix} "-l${_tl_item}")
  endif()
endforeach()

foreach(_tl_var IN ITEMS _tl_pc_requires _tl_pc_requires_private
                         _tl_pc_libs _tl_pc_libs_private
                         _tl_pkgconfig_prefixes)
  list(REMOVE_DUPLICATES ${_tl_var})
endforeach()

# --- CMake package config ---------------------------------------------------

# Extra find_dependency() calls for tokenleaseConfig.cmake.in.
set(TOKENLEASE_CONFIG_DEPENDENCIES "")
if(_tl_need_threads)
  string(APPEND TOKENLEASE_CONFIG_DEPENDENCIES
    "find_dependency(Threads)\n")
endif()
if(_tl_pkgconfig_prefixes)
  string(APPEND TOKENLEASE_CONFIG_DEPENDENCIES
    "find_dependency(PkgConfig)\n")
  foreach(_tl_prefix IN LISTS _tl_pkgconfig_prefixes)
    string(REPLACE ";" " " _tl_mods "${_tl_modules_${_tl_prefix}}")
    string(APPEND TOKENLEASE_CONFIG_DEPENDENCIES
      "if(NOT TARGET PkgConfig::${_tl_prefix})\n"
      "  pkg_check_modules(${_tl_prefix} QUIET IMPORTED_TARGET ${_tl_mods})\n"
      "  if(NOT ${_tl_prefix}_FOUND)\n"
      "    set(tokenlease_FOUND FALSE)\n"
      "    set(tokenlease_NOT_FOUND_MESSAGE\n"
      "        \"tokenlease needs the pkg-config module(s) ${_tl_mods}\")\n"
      "    return()\n"
      "  endif()\n"
      "endif()\n")
  endforeach()
endif()

configure_package_config_file(
  "${PROJECT_SOURCE_DIR}/cmake/tokenleaseConfig.cmake.in"
  "${PROJECT_BINARY_DIR}/tokenleaseConfig.cmake"
  INSTALL_DESTINATION "${TOKENLEASE_INSTALL_CMAKEDIR}")
write_basic_package_version_file(
  "${PROJECT_BINARY_DIR}/tokenleaseConfigVersion.cmake"
  VERSION "${PROJECT_VERSION}"
  COMPATIBILITY SameMajorVersion)
install(FILES
  "${PROJECT_BINARY_DIR}/tokenleaseConfig.cmake"
  "${PROJECT_BINARY_DIR}/tokenleaseConfigVersion.cmake"
  DESTINATION "${TOKENLEASE_INSTALL_CMAKEDIR}"
  COMPONENT tokenlease)

# --- pkg-config file --------------------------------------------------------

string(REPLACE ";" ", " TOKENLEASE_PC_REQUIRES "${_tl_pc_requires}")
string(REPLACE ";" ", " TOKENLEASE_PC_REQUIRES_PRIVATE
       "${_tl_pc_requires_private}")
string(REPLACE ";" " " TOKENLEASE_PC_LIBS "${_tl_pc_libs}")
string(REPLACE ";" " " TOKENLEASE_PC_LIBS_PRIVATE "${_tl_pc_libs_private}")

get_target_property(TOKENLEASE_PC_LIBNAME tokenlease OUTPUT_NAME)
if(NOT TOKENLEASE_PC_LIBNAME)
  set(TOKENLEASE_PC_LIBNAME tokenlease)
endif()
foreach(_tl_dir IN ITEMS LIBDIR INCLUDEDIR)
  if(IS_ABSOLUTE "${CMAKE_INSTALL_${_tl_dir}}")
    set(TOKENLEASE_PC_${_tl_dir} "${CMAKE_INSTALL_${_tl_dir}}")
  else()
    set(TOKENLEASE_PC_${_tl_dir} "\${prefix}/${CMAKE_INSTALL_${_tl_dir}}")
  endif()
endforeach()

# The prefix is only known at install time (`cmake --install --prefix P`
# overrides CMAKE_INSTALL_PREFIX), so the .pc file is made in two steps:
# everything but the prefix now, the prefix by an install(CODE) step.
set(TOKENLEASE_PC_PREFIX "@TOKENLEASE_PC_INSTALL_PREFIX@")
configure_file("${PROJECT_SOURCE_DIR}/cmake/tokenlease.pc.in"
               "${PROJECT_BINARY_DIR}/pkgconfig/tokenlease.pc.in" @ONLY)
install(CODE "
  set(TOKENLEASE_PC_INSTALL_PREFIX \"\${CMAKE_INSTALL_PREFIX}\")
  configure_file(\"${PROJECT_BINARY_DIR}/pkgconfig/tokenlease.pc.in\"
                 \"${PROJECT_BINARY_DIR}/pkgconfig/tokenlease.pc\" @ONLY)
" COMPONENT tokenlease)
install(FILES "${PROJECT_BINARY_DIR}/pkgconfig/tokenlease.pc"
  DESTINATION "${TOKENLEASE_INSTALL_PKGCONFIGDIR}"
  COMPONENT tokenlease)

# --- Test: the installed package can be consumed ---------------------------

# consumer_package installs the built tree into a prefix under the build
# directory, then builds and runs tests/consumer/ with find_package() and a
# second program with `pkg-config --cflags --libs tokenlease`
# (cmake/consumer_test.cmake).
#
# It is not registered in sanitizer builds (asan/tsan presets): the installed
# library would carry sanitizer instrumentation that the consumer, built
# without the sanitizer flags, cannot link; and packaging does not differ
# between builds, so the release preset covers it without a redundant build.
if(TOKENLEASE_BUILD_TESTS AND NOT "${CMAKE_CXX_FLAGS} ${CMAKE_EXE_LINKER_FLAGS}"
   MATCHES "-fsanitize")
  add_test(NAME consumer_package
    COMMAND "${CMAKE_COMMAND}"
      "-DTOKENLEASE_SOURCE_DIR=${PROJECT_SOURCE_DIR}"
      "-DTOKENLEASE_BINARY_DIR=${PROJECT_BINARY_DIR}"
      "-DTOKENLEASE_LIBDIR=${CMAKE_INSTALL_LIBDIR}"
      "-DTOKENLEASE_CXX_COMPILER=${CMAKE_CXX_COMPILER}"
      "-DTOKENLEASE_GENERATOR=${CMAKE_GENERATOR}"
      "-DTOKENLEASE_MAKE_PROGRAM=${CMAKE_MAKE_PROGRAM}"
      "-DTOKENLEASE_BUILD_TYPE=$<CONFIG>"
      "-DTOKENLEASE_PKG_CONFIG=${PKG_CONFIG_EXECUTABLE}"
      -P "${PROJECT_SOURCE_DIR}/cmake/consumer_test.cmake")
  set_tests_properties(consumer_package PROPERTIES
    LABELS slow
    TIMEOUT 600)
endif()
