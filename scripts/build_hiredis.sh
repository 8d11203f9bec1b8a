#!/usr/bin/env bash
# Builds hiredis 1.x with TLS (libhiredis.a, libhiredis_ssl.a, headers,
# pkg-config files) into a private prefix, for systems whose own hiredis is
# older than 1.0 or lacks hiredis_ssl (Debian 12 ships 0.14.1, without
# TLS). docs/design.md "hiredis 1.x" says why tokenlease needs 1.x.
#
#   bash scripts/build_hiredis.sh            # prefix: see below
#   bash scripts/build_hiredis.sh /opt/hiredis
#
# The source is Debian 13's hiredis 1.2.0-6 source package, from Debian's
# own archive, fetched with a private apt configuration in a temporary
# directory (a deb-src line for trixie, its own lists and cache): the
# system's apt sources are never changed, and nothing is downloaded from
# anywhere else. dpkg-source checks the files against the .dsc and applies
# Debian's patches. Only static libraries are installed (built with -fPIC),
# so programs need no run-time path.
#
# Default prefix: $TOKENLEASE_DEPS_DIR/hiredis, where TOKENLEASE_DEPS_DIR
# defaults to ~/.cache/tokenlease (CMakeLists.txt looks there too). A
# prefix that already holds this version is kept: the build runs once per
# machine (about 5 s, 140 kB downloaded). Needs: apt-get, dpkg-source
# (dpkg-dev), make, cc, libssl-dev.
set -euo pipefail

readonly VERSION=1.2.0-6
readonly SUITE=trixie
readonly MIRROR=http://deb.debian.org/debian
readonly KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg

prefix="${1:-${TOKENLEASE_DEPS_DIR:-$HOME/.cache/tokenlease}/hiredis}"
readonly stamp="$prefix/.tokenlease-hiredis"
readonly want="hiredis $VERSION USE_SSL=1 static -fPIC"

if [[ -f "$stamp" ]] && [[ "$(cat "$stamp")" == "$want" ]]; then
  echo "build_hiredis.sh: hiredis $VERSION already in $prefix"
  exit 0
fi

for tool in apt-get dpkg-source make cc; do
  command -v "$tool" >/dev/null \
    || { echo "build_hiredis.sh: needs $tool (apt-get install dpkg-dev build-essential)" >&2; exit 1; }
done
[[ -r "$KEYRING" ]] \
  || { echo "build_hiredis.sh: needs $KEYRING (debian-archive-keyring)" >&2; exit 1; }

work="$(mktemp -d "${TMPDIR:-/tmp}/tokenlease-hiredis.XXXXXX")"
trap 'rm -rf "$work"' EXIT

# The private apt configuration: only this file's deb-src line, its own
# lists, cache and state. Root is not needed.
mkdir -p "$work/apt/sources.list.d" "$work/apt/lists/partial" \
  "$work/apt/cache/archives/partial" "$work/src"
echo "deb-src [signed-by=$KEYRING] $MIRROR $SUITE main" \
  > "$work/apt/sources.list"
apt_opts=(
  -o "Dir::Etc::SourceList=$work/apt/sources.list"
  -o "Dir::Etc::SourceParts=$work/apt/sources.list.d"
  -o "Dir::State::Lists=$work/apt/lists"
  -o "Dir::Cache=$work/apt/cache"
  -o "Debug::NoLocking=1"
  -o "APT::Sandbox::User=$(id -un)"
  -q
)
echo "build_hiredis.sh: fetching hiredis $VERSION (Debian $SUITE source package)"
apt-get "${apt_opts[@]}" update >"$work/apt.log" 2>&1 \
  || { cat "$work/apt.log" >&2; echo "build_hiredis.sh: apt-get update failed" >&2; exit 1; }
(cd "$work/src" && apt-get "${apt_opts[@]}" source --download-only \
  "hiredis=$VERSION") >>"$work/apt.log" 2>&1 \
  || { cat "$work/apt.log" >&2; echo "build_hiredis.sh: apt-get source failed" >&2; exit 1; }
(cd "$work/src" && dpkg-source --no-check -x "hiredis_$VERSION.dsc" hiredis) \
  >>"$work/apt.log" 2>&1 \
  || { cat "$work/apt.log" >&2; echo "build_hiredis.sh: dpkg-source failed" >&2; exit 1; }

echo "build_hiredis.sh: building into $prefix"
make -C "$work/src/hiredis" -j"$(nproc)" USE_SSL=1 \
  OPTIMIZATION=-O2 CFLAGS="-fPIC -g" static >"$work/make.log" 2>&1 \
  || { tail -30 "$work/make.log" >&2; echo "build_hiredis.sh: make failed" >&2; exit 1; }
rm -rf "$prefix"
make -C "$work/src/hiredis" USE_SSL=1 PREFIX="$prefix" LIBRARY_PATH=lib \
  install >>"$work/make.log" 2>&1 \
  || { tail -30 "$work/make.log" >&2; echo "build_hiredis.sh: make install failed" >&2; exit 1; }
# Static only: the shared objects would need a run-time path everywhere.
rm -rf "$prefix"/lib/libhiredis*.so* "$prefix"/lib/cmake
echo "$want" > "$stamp"
echo "build_hiredis.sh: hiredis $VERSION installed in $prefix"
