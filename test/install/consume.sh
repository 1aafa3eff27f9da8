#!/usr/bin/env bash
# ctest blasst-install: `cmake --install` into a temporary prefix, then build
# projects against it the way an application would (test/install/consumer):
# blasst::runtime with LLVM/MLIR hidden from find_package, then blasst::jit:
# the README's C++ block as written and tools/blasst-jit-example, which runs
# (a JIT compile into a temporary cache; on a GPU it also launches). The
# installed blasst-compile must run too (its RPATH finds libMLIR/libLLVM).
# Usage: consume.sh BUILD_DIR SOURCE_DIR CMAKE GENERATOR MAKE_PROGRAM CXX
set -euo pipefail
BUILD="$1" SRC="$2" CMAKE="$3" GEN="$4" MAKE="$5" CXX="$6"
T="$(mktemp -d)"; trap 'rm -rf "$T"' EXIT
export BLASST_CACHE_DIR="$T/cache" # JIT compiles stay out of ~/.cache
step() { printf '[blasst-install] %s\n' "$*"; }

step "install into $T/prefix"
"$CMAKE" --install "$BUILD" --prefix "$T/prefix" > "$T/install.log"
for f in lib/cmake/blasst/blasstConfig.cmake lib/libblasst_jit.a \
         lib/libBLASSTRuntime.a include/blasst/JIT/JIT.h bin/blasst-compile; do
  [[ -e "$T/prefix/$f" ]] || { echo "not installed: $f"; exit 1; }
done
"$T/prefix/bin/blasst-compile" --list-presets > /dev/null

configure() { # DIR [cmake args...]
  local dir="$1"; shift
  "$CMAKE" -S "$SRC/test/install/consumer" -B "$dir" -G "$GEN" \
    -DCMAKE_MAKE_PROGRAM="$MAKE" -DCMAKE_CXX_COMPILER="$CXX" \
    -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$T/prefix" "$@" \
    > "$dir.log" 2>&1 || { cat "$dir.log"; exit 1; }
}

step "runtime-only consumer (find_package(LLVM/MLIR) disabled)"
configure "$T/rt" -DCMAKE_DISABLE_FIND_PACKAGE_MLIR=ON \
  -DCMAKE_DISABLE_FIND_PACKAGE_LLVM=ON
"$CMAKE" --build "$T/rt" -j 1 > "$T/rt-build.log" 2>&1 ||
  { cat "$T/rt-build.log"; exit 1; }
"$T/rt/runtime-only"

step "JIT consumer: the README's C++ block and the JIT example"
configure "$T/jit" -DBLASST_CONSUMER_JIT=ON -DBLASST_README="$SRC/README.md" \
  -DBLASST_EXAMPLE_DIR="$SRC/tools/blasst-jit-example"
"$CMAKE" --build "$T/jit" -j 1 > "$T/jit-build.log" 2>&1 ||
  { cat "$T/jit-build.log"; exit 1; }
"$T/jit/readme-snippet"
"$T/jit/jit-example/blasst-jit-example"
step "ok"
