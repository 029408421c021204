#!/usr/bin/env bash
# Assembles the multilingual tokenizer test sample from files of Debian packages (listed in
# scripts/packages/tokenizer.txt) and of this repository, as tests/fixtures/tokenizer/sample_manifest.tsv
# says: one document per manifest "document", its sources concatenated in manifest order.
#   tests/tokenizer/assemble_sample.sh OUT_DIR
# Writes OUT_DIR/documents/<document>.txt and OUT_DIR/packages.txt (installed versions). Deterministic;
# atomic (built beside OUT_DIR, then renamed); does nothing if OUT_DIR is already complete for
# this manifest. The tests compare each document's hash with the fixtures'.
set -euo pipefail
export LC_ALL=C
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
manifest="$root/tests/fixtures/tokenizer/sample_manifest.tsv"
out="${1:?usage: assemble_sample.sh OUT_DIR}"

stamp="$(cat "$manifest" "$root/tests/fixtures/tokenizer/edge_cases.txt" | cksum | cut -d' ' -f1)"
complete() { [ -f "$out/.complete" ] && [ "$(cat "$out/.complete")" = "$stamp" ]; }
if complete; then exit 0; fi
mkdir -p "$(dirname "$out")"

tmp="$(mktemp -d "${out%/}.tmp.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/documents"
declare -A packages=()
while IFS=$'\t' read -r document package path take; do
  case "$document" in ''|'#'*) continue ;; esac
  [ "$package" = "-" ] || packages["$package"]=1
  case "$path" in /*) source="$path" ;; *) source="$root/$path" ;; esac
  if [ ! -f "$source" ]; then
    echo "assemble_sample: $source is missing: install the Debian package '$package'" \
         "(scripts/packages/tokenizer.txt lists it)" >&2
    exit 1
  fi
  case "$source" in
    *.gz) reader=(gzip -dc) ;;
    *.bz2) reader=(bzip2 -dc) ;;
    *) reader=(cat) ;;
  esac
  case "$take" in
    all) "${reader[@]}" "$source" >>"$tmp/documents/$document.txt" ;;
    lines=*) "${reader[@]}" "$source" | awk -v n="${take#lines=}" 'NR <= n' >>"$tmp/documents/$document.txt" ;;
    *) echo "assemble_sample: $manifest: bad take '$take' for $path (expected all or lines=N)" >&2; exit 1 ;;
  esac
done <"$manifest"
for package in $(printf '%s\n' "${!packages[@]}" | sort); do
  echo "$package $(dpkg-query -W -f='${Version}' "$package" 2>/dev/null || echo missing)"
done >"$tmp/packages.txt"
echo "$stamp" >"$tmp/.complete"

# Parallel test processes may race here: only a stale folder is removed, and a rename onto a
# complete folder fails harmlessly.
if [ -e "$out" ] && ! complete; then rm -rf "$out"; fi
mv -T "$tmp" "$out" 2>/dev/null || true
complete || { echo "assemble_sample: could not create $out" >&2; exit 1; }
