#!/usr/bin/env bash
# Packs one round's raw material (logs, SASS dumps, patches, device scripts)
# into docs/results/<round>.tar.xz, reproducibly: the same files give the
# same bytes (sorted names, fixed owner, mtime and modes, single-threaded xz).
# Paths inside the archive are relative to the round's folder (r48/log.txt).
#   bash tools/archive-results.sh docs/results/<round>
# The folder (ignored by git) is left in place: commit the archive, then
# delete the folder. docs/results/README.md has the convention.
set -euo pipefail

dir="${1:?usage: bash tools/archive-results.sh docs/results/<round>}"
dir="${dir%/}"
[[ -d "$dir" ]] || { echo "archive-results: no folder $dir" >&2; exit 1; }
out="$dir.tar.xz"

export LC_ALL=C TZ=UTC
members=()
while IFS= read -r -d '' f; do members+=("${f#./}"); done \
  < <(cd "$dir" && find . -mindepth 1 -maxdepth 1 -print0 | sort -z)
((${#members[@]})) || { echo "archive-results: $dir is empty" >&2; exit 1; }

XZ_OPT="-6 -T1" tar -C "$dir" --sort=name --owner=0 --group=0 --numeric-owner \
  --mtime=2026-11-29 --mode='u+rwX,go+rX,go-w' -cJf "$out" -- "${members[@]}"

files=$(find "$dir" -type f | wc -l)
listed=$(tar -tvJf "$out" | grep -c '^-')
[[ "$files" -eq "$listed" ]] ||
  { echo "archive-results: $out holds $listed files, $dir $files" >&2; exit 1; }
echo "$out: $listed files, $(du -k "$out" | cut -f1) KiB (from $(du -sk "$dir" | cut -f1) KiB)"
