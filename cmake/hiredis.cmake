# Finds hiredis >= 1.0 with hiredis_ssl and defines PkgConfig::HIREDIS
# (both modules). Order: the system's pkg-config modules; then the private
# prefix (TOKENLEASE_HIREDIS_PREFIX, default $TOKENLEASE_DEPS_DIR/hiredis or
# ~/.cache/tokenlease/hiredis), built there by scripts/build_hiredis.sh if
# TOKENLEASE_BUILD_HIREDIS is on and it holds nothing yet.
# TOKENLEASE_HIREDIS_PKGCONFIG_DIR is set to the private prefix's
# pkg-config directory when that is the one used (cmake/install.cmake
# writes it into the installed package's configuration).

set(TOKENLEASE_HIREDIS_MODULES "hiredis>=1.0" "hiredis_ssl>=1.0")
set(TOKENLEASE_HIREDIS_PKGCONFIG_DIR "")

set(_tl_system_rc 1)
if(NOT TOKENLEASE_HIREDIS_PREFIX)
  execute_process(
    COMMAND "${PKG_CONFIG_EXECUTABLE}" --exists "hiredis >= 1.0"
            "hiredis_ssl >= 1.0"
    RESULT_VARIABLE _tl_system_rc)
endif()
if(NOT _tl_system_rc EQUAL 0)
  set(_tl_prefix "${TOKENLEASE_HIREDIS_PREFIX}")
  if(NOT _tl_prefix)
    if(NOT "$ENV{TOKENLEASE_DEPS_DIR}" STREQUAL "")
      set(_tl_prefix "$ENV{TOKENLEASE_DEPS_DIR}/hiredis")
    else()
      set(_tl_prefix "$ENV{HOME}/.cache/tokenlease/hiredis")
    endif()
  endif()
  if(NOT EXISTS "${_tl_prefix}/lib/pkgconfig/hiredis_ssl.pc"
     AND TOKENLEASE_BUILD_HIREDIS)
    message(STATUS "tokenlease: no hiredis >= 1.0 with hiredis_ssl on this "
                   "system; building it into ${_tl_prefix} "
                   "(scripts/build_hiredis.sh)")
    execute_process(
      COMMAND bash "${PROJECT_SOURCE_DIR}/scripts/build_hiredis.sh"
              "${_tl_prefix}"
      RESULT_VARIABLE _tl_rc)
    if(NOT _tl_rc EQUAL 0)
      message(FATAL_ERROR "scripts/build_hiredis.sh failed (see above)")
    endif()
  endif()
  set(TOKENLEASE_HIREDIS_PKGCONFIG_DIR "${_tl_prefix}/lib/pkgconfig")
  set(ENV{PKG_CONFIG_PATH}
      "${TOKENLEASE_HIREDIS_PKGCONFIG_DIR}:$ENV{PKG_CONFIG_PATH}")
endif()
# Libraries found by an earlier configure (such as hiredis 0.14 before the
# private prefix existed) must not stick.
foreach(_tl_lib IN ITEMS hiredis hiredis_ssl)
  unset(pkgcfg_lib_HIREDIS_${_tl_lib} CACHE)
endforeach()
pkg_check_modules(HIREDIS QUIET IMPORTED_TARGET ${TOKENLEASE_HIREDIS_MODULES})
if(NOT HIREDIS_FOUND)
  message(FATAL_ERROR
    "tokenlease needs hiredis >= 1.0 with TLS (pkg-config modules hiredis "
    "and hiredis_ssl). Install libhiredis-dev >= 1.0 (Debian 13, Ubuntu "
    "24.04), or run `bash scripts/build_hiredis.sh` (Debian 12: builds "
    "Debian 13's hiredis into ~/.cache/tokenlease/hiredis), or set "
    "TOKENLEASE_HIREDIS_PREFIX to a prefix that has it.")
endif()
message(STATUS "tokenlease: hiredis ${HIREDIS_hiredis_VERSION} with "
               "hiredis_ssl: ${HIREDIS_LINK_LIBRARIES}")
