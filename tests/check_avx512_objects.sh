#!/usr/bin/env bash
# The objects compiled with AVX-512 flags (CMake's gattn_avx512) must define only their own
# kernels, in namespace gattn::avx512: a weak or unique symbol (an inline function, a template
# instance, a static local of one) could be the copy the linker keeps for baseline code too, and
# then run on a CPU without AVX-512. Weak type information (data) is allowed.
#   tests/check_avx512_objects.sh OBJECT...   (also one argument holding a ';'-separated list)
set -euo pipefail
objects=()
for arg in "$@"; do IFS=';' read -ra parts <<< "$arg"; objects+=("${parts[@]}"); done
((${#objects[@]})) || { echo "check_avx512_objects: no objects given" >&2; exit 2; }
bad=0
for o in "${objects[@]}"; do
  # Defined external symbols: type, then the demangled name.
  while read -r type name; do
    case "$type" in
      T) [[ "$name" == gattn::avx512::* ]] && continue ;;
      V) [[ "$name" == "typeinfo for "* || "$name" == "typeinfo name for "* ]] && continue ;;
    esac  # (type information, which UBSan's function check emits, is data, not code)
    echo "$o: symbol '$name' (nm type $type) is not a gattn::avx512 function of its own"
    bad=1
  done < <(nm -C --defined-only --extern-only "$o" | sed -E 's/^[0-9a-f]* *([A-Za-z]) (.*)$/\1 \2/')
done
((bad)) && exit 1
echo "check_avx512_objects: ${#objects[@]} objects define only gattn::avx512 functions"
