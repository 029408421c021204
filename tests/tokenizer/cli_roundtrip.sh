#!/usr/bin/env bash
# `gattn tokenizer` end to end: train on a file, encode it (from --input and from stdin), decode the
# ids back to the very same bytes (invalid UTF-8 and a literal <|endoftext|> included), and bench.
#   cli_roundtrip.sh GATTN_BINARY TEXT_FILE
set -euo pipefail
gattn="$1"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
printf 'caf\xc3\xa9 \xff\xfe <|endoftext|> end\r\n' >"$tmp/text.bin"
cat "$2" >>"$tmp/text.bin"
"$gattn" tokenizer train --input "$tmp/text.bin" --vocab-size 400 --out "$tmp/tok.json"
"$gattn" tokenizer encode --tokenizer "$tmp/tok.json" --input "$tmp/text.bin" >"$tmp/ids.txt"
"$gattn" tokenizer decode --tokenizer "$tmp/tok.json" <"$tmp/ids.txt" >"$tmp/back.bin"
cmp "$tmp/text.bin" "$tmp/back.bin"
"$gattn" tokenizer encode --tokenizer "$tmp/tok.json" <"$tmp/text.bin" | cmp - "$tmp/ids.txt"
"$gattn" tokenizer bench --tokenizer "$tmp/tok.json" --input "$tmp/text.bin" --repeat 2 --mode sequential
echo "round trip: $(wc -w <"$tmp/ids.txt") ids, $(wc -c <"$tmp/text.bin") bytes back unchanged"
