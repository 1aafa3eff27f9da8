# -*- Python -*-
# lit configuration for blasst's IR and PTX tests.
import os

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "BLASST"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".spec", ".test"]
config.excludes = ["CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py", "unit", "gpu",
                   "Inputs"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.blasst_obj_root, "test")

config.substitutions.append(("%PATH%", config.environment["PATH"]))
config.environment["FILECHECK_OPTS"] = "--enable-var-scope"

llvm_config.with_system_environment(["HOME", "TMP", "TEMP"])
llvm_config.use_default_substitutions()

# llvm-22's FileCheck and not, never an older one that may be on PATH.
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.with_environment("PATH", config.blasst_tools_dir, append_path=True)

tools = ["blasst-opt", "blasst-compile", "blasst-bench"]
llvm_config.add_tool_substitutions(
    [ToolSubst(t, unresolved="ignore") for t in tools],
    [config.blasst_tools_dir])

# The toolkit the build was configured with (CMake's BLASST_CUDA_HOME, from
# -DCUDA_HOME, $CUDA_HOME or $CUDA_PATH): the tools under test find ptxas
# there too, so the `ptxas` feature and the ptxas they run agree.
config.environment["CUDA_HOME"] = config.cuda_home
config.environment.pop("CUDA_PATH", None)

# Configuring the project itself (test/cmake): the build's CMake and compilers.
config.substitutions.append(
    ("%cmake", '"%s" -G "%s" -DCMAKE_MAKE_PROGRAM="%s" -DCMAKE_C_COMPILER="%s" '
     '-DCMAKE_CXX_COMPILER="%s"' % (config.cmake_command, config.cmake_generator,
                                    config.cmake_make_program, config.c_compiler,
                                    config.cxx_compiler)))
config.substitutions.append(("%blasst_src_root", config.blasst_src_root))
config.substitutions.append(("%blasst_obj_root", config.blasst_obj_root))
config.substitutions.append(
    ("%ctest", '"%s"' % os.path.join(os.path.dirname(config.cmake_command),
                                     "ctest")))
config.substitutions.append(("%cxx", '"%s"' % config.cxx_compiler))
config.substitutions.append(("%llvm_include_dirs", config.llvm_include_dirs))
config.substitutions.append(("%cuda_home", config.cuda_home))

if os.path.exists(os.path.join(config.cuda_home, "bin", "ptxas")):
    config.available_features.add("ptxas")
    config.substitutions.append(
        ("%ptxas", os.path.join(config.cuda_home, "bin", "ptxas")))

# The runtime's fake libcuda (runtime/test/FakeDriver.cpp: one sm_90 "GPU"
# that records launches), for what tools do once a GPU is found.
fake_libcuda = os.path.join(config.blasst_obj_root, "runtime",
                            "libblasst-fake-cuda.so")
if os.path.exists(fake_libcuda):
    config.available_features.add("fake-libcuda")
    config.substitutions.append(("%fake_libcuda", fake_libcuda))
