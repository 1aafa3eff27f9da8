# ctest blasst-capi-no-llvm: the runtime's C library (libblasst.so) must load
# on a GPU machine without LLVM/MLIR, so nothing it needs, directly or not,
# may be an LLVM or MLIR library. Usage: cmake -DLIB=path -P this-file
execute_process(COMMAND ldd "${LIB}" OUTPUT_VARIABLE out
                ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "ldd ${LIB} failed (${rc}): ${err}")
endif()
if(out MATCHES "LLVM|MLIR|llvm")
  message(FATAL_ERROR "${LIB} depends on LLVM/MLIR:\n${out}")
endif()
message(STATUS "${LIB} links no LLVM/MLIR:\n${out}")
