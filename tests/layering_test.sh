#!/usr/bin/env bash
# Checks the layering of src/ (src/CMakeLists.txt): a folder includes only
# itself and the folders below it,
#   base < local < core < redis < shared < {direct, leased}
# (direct and leased do not include each other), and only src/redis
# includes the generated Lua header. Prints every violation; exits 1 if any.
#
#   bash tests/layering_test.sh [SRC_DIR]   (default: src next to tests/)
set -euo pipefail
src="${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../src" && pwd)}"

declare -A rank=([base]=0 [local]=1 [core]=2 [redis]=3 [shared]=4 [direct]=5 [leased]=5)
violations=0
checked=0
for dir in "${!rank[@]}"; do
  [[ -d "${src}/${dir}" ]] || { echo "missing folder src/${dir}"; violations=1; continue; }
  while IFS= read -r file; do
    while IFS= read -r line; do
      inc="${line#*\"}"; inc="${inc%%\"*}"
      top="${inc%%/*}"
      checked=$((checked + 1))
      if [[ "${top}" == tokenlease_lua ]]; then
        if [[ "${dir}" != redis ]]; then
          echo "src/${dir}/${file##*/}: includes ${inc} (only src/redis embeds the scripts)"
          violations=1
        fi
        continue
      fi
      [[ -n "${rank[${top}]+x}" ]] || continue  # public, Abseil, system
      if [[ "${top}" != "${dir}" ]] &&
         ((rank[${top}] >= rank[${dir}])); then
        echo "src/${dir}/${file##*/}: includes ${inc} (src/${top} is not below src/${dir})"
        violations=1
      fi
    done < <(grep -E '^#include "' "${file}" || true)
  done < <(find "${src}/${dir}" -name '*.h' -o -name '*.cc')
done
if ((checked == 0)); then
  echo "no #include lines found under ${src}: wrong directory?"
  exit 1
fi
if ((violations)); then
  echo "layering violated (see src/CMakeLists.txt)"
  exit 1
fi
echo "layering OK: ${checked} includes checked"
