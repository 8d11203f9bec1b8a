# Installation and packaging of tokenlease; included at the end of the
# top-level CMakeLists.txt (after the library targets and their links exist).
#
# Installs:
#   <libdir>/libtokenlease_local.{a,so}, <libdir>/libtokenlease.{a,so}
#   <includedir>/tokenlease/*.h
#   <libdir>/cmake/tokenlease/tokenlease{Config,ConfigVersion,Targets*}.cmake
#       -> find_package(tokenlease CONFIG): tokenlease::local (the local
#          Limiter, Abseil only) and tokenlease::tokenlease (everything)
#   <libdir>/pkgconfig/tokenlease-local.pc, <libdir>/pkgconfig/tokenlease.pc
#       -> pkg-config --cflags --libs tokenlease-local | tokenlease
#
# The dependencies written into the package config and the .pc files are
# derived from the link libraries of each library target, so adding a
# dependency in CMakeLists.txt needs no change here. Understood link items:
#   absl::X          -> find_dependency(absl CONFIG); pkg-config module absl_X
#   PkgConfig::P     -> pkg_check_modules(P IMPORTED_TARGET ...) in the config;
#                       the modules of P in the .pc file (taken from the
#                       pkg_check_modules call, or from the variable
#                       TOKENLEASE_PC_MODULES_<P> if set)
#   Threads::Threads -> find_dependency(Threads); -pthread
#   another installed tokenlease library -> its .pc module
#   $<BUILD_INTERFACE:x> -> nothing (the layers' object libraries: their
#                       objects are inside the archive)
#   plain names      -> -l<name> (e.g. `atomic`); "-..." flags as they are
#
# All install rules are in the component `tokenlease`, so
# `cmake --install build --component tokenlease` installs only the library.

include(CMakePackageConfigHelpers)

set(TOKENLEASE_INSTALL_CMAKEDIR "${CMAKE_INSTALL_LIBDIR}/cmake/tokenlease")
set(TOKENLEASE_INSTALL_PKGCONFIGDIR "${CMAKE_INSTALL_LIBDIR}/pkgconfig")

# The installed libraries and their pkg-config module names.
set(TOKENLEASE_INSTALLED_LIBRARIES tokenlease_local tokenlease)
set(TOKENLEASE_PC_NAME_tokenlease_local tokenlease-local)
set(TOKENLEASE_PC_NAME_tokenlease tokenlease)
set(TOKENLEASE_PC_DESCRIPTION_tokenlease_local
    "In-process lock-free rate limiter (local mode only)")
set(TOKENLEASE_PC_DESCRIPTION_tokenlease
    "In-process lock-free rate limiter with Redis-shared direct and leased modes")

# --- Libraries, headers, exported targets ----------------------------------

install(TARGETS ${TOKENLEASE_INSTALLED_LIBRARIES}
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

# --- Dependencies, derived from the targets' link libraries ----------------

# Returns in `out` the direct link items of `target` (`all`: PUBLIC+PRIVATE,
# `public`: PUBLIC/INTERFACE only).
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

set(_tl_need_threads FALSE)     # any library needs Threads
set(_tl_pkgconfig_prefixes "")  # PkgConfig::<prefix> any library links

# Writes the .pc file of one installed library (two steps: the prefix is
# only known at install time), collecting what the package config needs.
function(_tokenlease_pkgconfig_file target)
  _tokenlease_link_items(${target} all_items public_items)
  get_target_property(type ${target} TYPE)
  set(pc_requires "")          # pkg-config modules, public
  set(pc_requires_private "")  # pkg-config modules, private
  set(pc_libs "")              # extra linker flags, public
  set(pc_libs_private "")      # extra linker flags, private
  set(prefixes "")             # PkgConfig::<prefix> items
  foreach(item IN LISTS all_items)
    if(item MATCHES "^\\$<BUILD_INTERFACE:")
      continue()  # build-only (a layer's objects are in the archive)
    endif()
    if(item MATCHES "^\\$<LINK_ONLY:(.*)>$")
      set(item "${CMAKE_MATCH_1}")
    endif()
    # A static library must bring all its dependencies to the consumer's
    # link line even without `pkg-config --static`; a shared one only the
    # public.
    if(type STREQUAL "STATIC_LIBRARY" OR item IN_LIST public_items)
      set(suffix "")
    else()
      set(suffix "_private")
    endif()

    if(item MATCHES "\\$<")
      message(WARNING "cmake/install.cmake: link item '${item}' of "
                      "${target} is a generator expression; not written to "
                      "its .pc file.")
    elseif(item IN_LIST TOKENLEASE_INSTALLED_LIBRARIES)
      list(APPEND pc_requires${suffix} "${TOKENLEASE_PC_NAME_${item}}")
    elseif(item MATCHES "^absl::(.+)$")
      set(module "absl_${CMAKE_MATCH_1}")
      execute_process(
        COMMAND "${PKG_CONFIG_EXECUTABLE}" --exists "${module}"
        RESULT_VARIABLE rc)
      if(rc EQUAL 0)
        list(APPEND pc_requires${suffix} "${module}")
      else()
        message(WARNING "cmake/install.cmake: no pkg-config module "
                        "${module} for ${item}; the .pc of ${target} will "
                        "lack it.")
      endif()
    elseif(item MATCHES "^PkgConfig::(.+)$")
      set(prefix "${CMAKE_MATCH_1}")
      _tokenlease_pkgconfig_modules("${prefix}" modules)
      set(pc_modules "${modules}")
      if(prefix STREQUAL "HIREDIS" AND TOKENLEASE_HIREDIS_PKGCONFIG_DIR)
        # A private hiredis (cmake/hiredis.cmake): a consumer's pkg-config
        # would find the system's older one by name, so its archives go in
        # by path.
        list(APPEND pc_libs${suffix} ${HIREDIS_LINK_LIBRARIES})
        set(pc_modules "")
      endif()
      foreach(module IN LISTS pc_modules)
        # pkg_check_modules takes "name>=1.0"; a .pc file "name >= 1.0".
        string(REGEX REPLACE "^([^<>=]+)([<>=]+)(.+)$" "\\1 \\2 \\3"
               module "${module}")
        list(APPEND pc_requires${suffix} "${module}")
      endforeach()
      list(APPEND prefixes "${prefix}")
      set(_tl_modules_${prefix} "${modules}" PARENT_SCOPE)
    elseif(item STREQUAL "Threads::Threads")
      set(_tl_need_threads TRUE PARENT_SCOPE)
      list(APPEND pc_libs${suffix} "-pthread")
    elseif(TARGET "${item}")
      message(WARNING "cmake/install.cmake: ${target} links target "
                      "'${item}', which is neither absl::, PkgConfig::, "
                      "Threads::Threads nor an installed tokenlease library; "
                      "the installed package may not link.")
    elseif(item MATCHES "^-" OR IS_ABSOLUTE "${item}")
      list(APPEND pc_libs${suffix} "${item}")
    else()
      list(APPEND pc_libs${suffix} "-l${item}")
    endif()
  endforeach()
  foreach(var IN ITEMS pc_requires pc_requires_private pc_libs
                       pc_libs_private)
    list(REMOVE_DUPLICATES ${var})
  endforeach()
  list(APPEND prefixes ${_tl_pkgconfig_prefixes})
  list(REMOVE_DUPLICATES prefixes)
  set(_tl_pkgconfig_prefixes "${prefixes}" PARENT_SCOPE)

  set(TOKENLEASE_PC_NAME "${TOKENLEASE_PC_NAME_${target}}")
  set(TOKENLEASE_PC_DESCRIPTION "${TOKENLEASE_PC_DESCRIPTION_${target}}")
  string(REPLACE ";" ", " TOKENLEASE_PC_REQUIRES "${pc_requires}")
  string(REPLACE ";" ", " TOKENLEASE_PC_REQUIRES_PRIVATE
         "${pc_requires_private}")
  string(REPLACE ";" " " TOKENLEASE_PC_LIBS "${pc_libs}")
  string(REPLACE ";" " " TOKENLEASE_PC_LIBS_PRIVATE "${pc_libs_private}")
  get_target_property(TOKENLEASE_PC_LIBNAME ${target} OUTPUT_NAME)
  if(NOT TOKENLEASE_PC_LIBNAME)
    set(TOKENLEASE_PC_LIBNAME ${target})
  endif()
  foreach(dir IN ITEMS LIBDIR INCLUDEDIR)
    if(IS_ABSOLUTE "${CMAKE_INSTALL_${dir}}")
      set(TOKENLEASE_PC_${dir} "${CMAKE_INSTALL_${dir}}")
    else()
      set(TOKENLEASE_PC_${dir} "\${prefix}/${CMAKE_INSTALL_${dir}}")
    endif()
  endforeach()
  # The prefix is only known at install time (`cmake --install --prefix P`
  # overrides CMAKE_INSTALL_PREFIX), so the .pc file is made in two steps:
  # everything but the prefix now, the prefix by an install(CODE) step.
  set(TOKENLEASE_PC_PREFIX "@TOKENLEASE_PC_INSTALL_PREFIX@")
  set(stage "${PROJECT_BINARY_DIR}/pkgconfig/${TOKENLEASE_PC_NAME}.pc")
  configure_file("${PROJECT_SOURCE_DIR}/cmake/tokenlease.pc.in"
                 "${stage}.in" @ONLY)
  install(CODE "
    set(TOKENLEASE_PC_INSTALL_PREFIX \"\${CMAKE_INSTALL_PREFIX}\")
    configure_file(\"${stage}.in\" \"${stage}\" @ONLY)
  " COMPONENT tokenlease)
  install(FILES "${stage}"
    DESTINATION "${TOKENLEASE_INSTALL_PKGCONFIGDIR}"
    COMPONENT tokenlease)
endfunction()

foreach(_tl_target IN LISTS TOKENLEASE_INSTALLED_LIBRARIES)
  _tokenlease_pkgconfig_file(${_tl_target})
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
    # A hiredis built into a private prefix (cmake/hiredis.cmake) is found
    # where this build found it.
    set(_tl_path_line "")
    if(_tl_prefix STREQUAL "HIREDIS" AND TOKENLEASE_HIREDIS_PKGCONFIG_DIR)
      set(_tl_path_line
        "  set(ENV{PKG_CONFIG_PATH} \"${TOKENLEASE_HIREDIS_PKGCONFIG_DIR}:\$ENV{PKG_CONFIG_PATH}\")\n")
    endif()
    string(APPEND TOKENLEASE_CONFIG_DEPENDENCIES
      "if(NOT TARGET PkgConfig::${_tl_prefix})\n"
      "${_tl_path_line}"
      "  pkg_check_modules(${_tl_prefix} QUIET IMPORTED_TARGET ${_tl_mods})\n"
      "  if(NOT ${_tl_prefix}_FOUND)\n"
      "    set(tokenlease_FOUND FALSE)\n"
      "    set(tokenlease_NOT_FOUND_MESSAGE\n"
      "        \"tokenlease::tokenlease needs the pkg-config module(s) "
      "${_tl_mods}; for the local Limiter alone use "
      "find_package(tokenlease COMPONENTS local)\")\n"
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
# The license (Apache-2.0) travels with the package.
install(FILES "${PROJECT_SOURCE_DIR}/LICENSE"
  DESTINATION "${CMAKE_INSTALL_DATADIR}/doc/tokenlease"
  COMPONENT tokenlease)

# --- Test: the installed package can be consumed ---------------------------

# consumer_package installs the built tree into a prefix under the build
# directory, then builds and runs tests/consumer/ with find_package() (both
# libraries; the local-only consumer must see no hiredis or libevent) and
# programs built with `pkg-config --cflags --libs tokenlease-local` and
# `... tokenlease` (cmake/consumer_test.cmake).
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
    TIMEOUT 600
    COST 500)  # started early: about 40 s (tests/CMakeLists.txt, COST)
endif()
