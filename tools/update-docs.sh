#!/usr/bin/env bash
# docs/reference/*.md are generated from the TableGen files (ninja target
# blasst-docs, written to <build>/docs/reference/). This refreshes the
# checked-in copy, or with --check (the blasst-docs-current test) fails with
# a diff where it is stale. docs/reference/README.md is hand-written.
#   bash tools/update-docs.sh [--check] [BUILD_DIR]   (default: build)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
check=0
if [[ "${1:-}" == --check ]]; then check=1; shift; fi
BUILD_DIR="${1:-${BUILD_DIR:-$ROOT/build}}"
[[ -d "$BUILD_DIR" ]] ||
  { echo "update-docs: no build directory $BUILD_DIR (bash tools/dev.sh setup)" >&2; exit 1; }
gen="$BUILD_DIR/docs/reference"
ref="$ROOT/docs/reference"

# Regenerate from scratch, so that a doc no longer declared does not linger.
rm -rf "$gen"
cmake --build "$BUILD_DIR" --target blasst-docs >/dev/null ||
  { echo "update-docs: building blasst-docs failed" >&2; exit 1; }
shopt -s nullglob
generated=("$gen"/*.md)
((${#generated[@]})) || { echo "update-docs: nothing generated in $gen" >&2; exit 1; }

if ((check)); then
  stale=0
  for f in "${generated[@]}"; do
    n="$(basename "$f")"
    if [[ ! -f "$ref/$n" ]]; then
      echo "docs/reference/$n: missing"; stale=1
    elif ! diff -u --label "docs/reference/$n (checked in)" \
        --label "docs/reference/$n (generated)" "$ref/$n" "$f"; then
      stale=1
    fi
  done
  for f in "$ref"/*.md; do
    n="$(basename "$f")"
    [[ "$n" == README.md || -f "$gen/$n" ]] ||
      { echo "docs/reference/$n: no longer generated"; stale=1; }
  done
  if ((stale)); then
    echo "docs/reference is out of date with the .td files: run" \
      "'bash tools/update-docs.sh $BUILD_DIR' and commit docs/reference." >&2
    exit 1
  fi
  echo "docs/reference is up to date (${#generated[@]} generated files)"
  exit 0
fi

for f in "$ref"/*.md; do
  n="$(basename "$f")"
  [[ "$n" == README.md || -f "$gen/$n" ]] || rm -v "$f"
done
cp "${generated[@]}" "$ref/"
echo "docs/reference refreshed from $gen:"
git -C "$ROOT" status --short -- docs/reference
