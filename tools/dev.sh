#!/usr/bin/env bash
# blasst developer entry point: the README's two commands.
#   bash tools/dev.sh main   set up, build, compile the default preset for
#                            sm_90a and sm_100a (ws IR + summary), emit PTX
#                            and a cubin for sm_90a and, where a GPU is
#                            present, run, check and time it
#   bash tools/dev.sh test   set up, build, run every test (lit + unit)
#   bash tools/dev.sh setup  only install what is missing, configure, build
#   bash tools/dev.sh sanitize  build with AddressSanitizer and UBSan in
#                            build-asan (SAN_BUILD_DIR) and run the unit
#                            tests, the lit suites of the passes, dialects
#                            and tools (SAN_LIT=all: every lit test, ~1 h
#                            on 2 cores) and the mutation fuzzer under them
# Environment: BUILD_DIR (default build), JOBS (default: nproc),
# PRESET (default llama3-8b-prefill), CUDA_HOME (default /usr/local/cuda).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${BUILD_DIR:-$ROOT/build}"
JOBS="${JOBS:-$(nproc)}"
PRESET="${PRESET:-llama3-8b-prefill}"
PACKAGES=(llvm-22-dev libmlir-22-dev mlir-22-tools llvm-22-tools libzstd-dev
          cmake ninja-build clang lld libgtest-dev)

log() { printf '\033[1m[blasst]\033[0m %s\n' "$*" >&2; }
die() { printf '[blasst] error: %s\n' "$*" >&2; exit 1; }

install_packages() {
  local missing=()
  for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
      missing+=("$p")
  done
  if ((${#missing[@]})); then
    log "installing: ${missing[*]}"
    local sudo=""
    [[ $(id -u) -eq 0 ]] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
  fi
  [[ -d /usr/lib/llvm-22/lib/cmake/mlir ]] ||
    die "MLIR 22 not found at /usr/lib/llvm-22 after installing ${PACKAGES[*]}"
}

# cmake for build directory $1 with the project's toolchain; the rest of the
# arguments are added (the build type first).
configure() {
  local dir="$1"
  shift
  cmake -G Ninja -S "$ROOT" -B "$dir" "$@" \
    -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
    -DLLVM_USE_LINKER=lld \
    -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
    -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit >/dev/null
}

configure_and_build() {
  local start=$SECONDS
  if [[ ! -f "$BUILD_DIR/build.ninja" ]]; then
    log "configuring $BUILD_DIR"
    configure "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release
  fi
  log "building with $JOBS jobs"
  ninja -C "$BUILD_DIR" -j "$JOBS" "$@"
  log "build done in $((SECONDS - start)) s"
}

run_main() {
  local out="$BUILD_DIR/out"
  mkdir -p "$out"
  log "compiling preset $PRESET to ws IR for sm_90a and sm_100a"
  for t in sm_90a sm_100a; do
    "$BUILD_DIR/bin/blasst-compile" --preset "$PRESET" --target "$t" \
      --emit ws -o "$out/$PRESET.$t.ws.mlir" 2>/dev/null
    cat "$out/$PRESET.$t.ws.mlir"
  done
  echo
  "$BUILD_DIR/bin/blasst-compile" --preset "$PRESET" --target sm_90a \
    --target sm_100a --summary -o /dev/null
  log "IR written to $out/$PRESET.{sm_90a,sm_100a}.ws.mlir"

  log "compiling $PRESET for sm_90a to PTX and a cubin"
  "$BUILD_DIR/bin/blasst-compile" --preset "$PRESET" --target sm_90a \
    --emit ptx -o "$out/$PRESET.sm_90a.ptx"
  "$BUILD_DIR/bin/blasst-compile" --preset "$PRESET" --target sm_90a \
    --emit cubin -o "$out/$PRESET.sm_90a" -v 2>&1 | grep -E "blasst-compile|registers|spill"
  log "compiling $PRESET for sm_100a to a cubin (ptxas; no B200 here to run it)"
  "$BUILD_DIR/bin/blasst-compile" --preset "$PRESET" --target sm_100a \
    --emit cubin -o "$out/$PRESET.sm_100a" -v 2>&1 | grep -E "blasst-compile|registers|spill"

  log "running the sm_90a kernel (checked against a CPU reference, then timed)"
  local rc=0
  "$BUILD_DIR/bin/blasst-bench" --kernel "$out/$PRESET.sm_90a" --batch 1 \
    --seq "${SEQ:-4096}" --check rows:64 --warmup 5 --iters 20 || rc=$?
  if [[ $rc -eq 2 ]]; then
    log "no GPU here: the kernel was compiled and assembled but not run"
  elif [[ $rc -ne 0 ]]; then
    die "the kernel failed its check (blasst-bench exit $rc)"
  fi
}

run_tests() {
  local start=$SECONDS
  log "running tests (lit + unit) with ctest"
  local rc=0
  ctest --test-dir "$BUILD_DIR" --output-on-failure -j "$JOBS" || rc=$?
  # ctest lists a skipped test without its output: say why it was skipped.
  local last="$BUILD_DIR/Testing/Temporary/LastTest.log"
  if [[ -f $last ]]; then
    grep -h -E '^[[:alnum:]_.-]+: SKIPPED: ' "$last" | sort -u |
      while read -r why; do log "skipped: $why"; done || true
  fi
  log "tests done in $((SECONDS - start)) s"
  return $rc
}

run_sanitized() {
  local start=$SECONDS dir="${SAN_BUILD_DIR:-$ROOT/build-asan}"
  local rtdir
  rtdir="$(clang++ -print-runtime-dir)"
  local san="-fsanitize=address,undefined -fno-sanitize-recover=undefined"
  # Shared libraries (libblasst.so) take the sanitizer runtime from the
  # executable: both link the shared runtime, found through the rpath.
  local link="-fsanitize=address,undefined -shared-libasan -Wl,-rpath,$rtdir"
  # Configured every time: the flags are this mode's, whatever configured
  # the directory before.
  log "configuring $dir (AddressSanitizer + UBSan)"
  configure "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    "-DCMAKE_C_FLAGS=$san -fno-omit-frame-pointer" \
    "-DCMAKE_CXX_FLAGS=$san -fno-omit-frame-pointer" \
    "-DCMAKE_EXE_LINKER_FLAGS=$link" \
    "-DCMAKE_SHARED_LINKER_FLAGS=$link"
  log "building $dir with $JOBS jobs"
  ninja -C "$dir" -j "$JOBS"
  # A report aborts (a signal): lit's `not` and the fuzzer take a signal
  # as a crash, where an exit status would pass for a rejected input.
  export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}"
  export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1:abort_on_error=1}"
  local rc=0
  # Not here: lit (below), the package install and the Python package (a
  # Python interpreter cannot load an instrumented libblasst.so without
  # the runtime preloaded) and the no-LLVM check (the runtime is a
  # dependency of every instrumented library).
  log "unit tests under the sanitizers"
  ctest --test-dir "$dir" --output-on-failure -j "$JOBS" \
    -E 'blasst-lit|blasst-fuzz|blasst-install|blasst-python|blasst-capi-no-llvm' ||
    rc=1
  local suites=(test/Dialect test/Conversion test/tools)
  [[ ${SAN_LIT:-} == all ]] && suites=(test)
  log "lit (${suites[*]}) under the sanitizers"
  (cd "$dir" && /usr/lib/llvm-22/bin/lit -q -j "$JOBS" "${suites[@]}") || rc=1
  log "the mutation fuzzer under the sanitizers"
  python3 "$ROOT/tools/fuzz/fuzz-lit.py" --build "$dir" --src "$ROOT" \
    --jobs "$JOBS" --timeout 120 || rc=1
  log "sanitized run done in $((SECONDS - start)) s (rc $rc)"
  return $rc
}

cmd="${1:-}"
case "$cmd" in
  setup) install_packages; configure_and_build ;;
  main) install_packages; configure_and_build; run_main ;;
  test) install_packages; configure_and_build; run_tests ;;
  sanitize) install_packages; run_sanitized ;;
  *) die "usage: bash tools/dev.sh main|test|setup|sanitize" ;;
esac
