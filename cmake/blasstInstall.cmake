# `cmake --install`: headers, libraries, tools and the CMake package that
# find_package(blasst) loads (cmake/blasstConfig.cmake.in). Included by the
# top-level CMakeLists.txt, which calls:
#
#   blasst_install_library(<target> <name> <component> [NEEDS_MLIR])
#       installs <target> and exports it as blasst::<name> (also an alias in
#       this build) in the package's <component>. NEEDS_MLIR: its link
#       interface names the MLIR/LLVM 22 shared libraries, so the package
#       finds MLIR before it loads the component. A new exported library is
#       one such line (plus install(FILES) for its headers).
#   blasst_install_finalize()
#       once, at the end: the export files and blasstConfig.cmake.
#
# Components: runtime (blasst::spec, blasst::runtime: no LLVM/MLIR) and jit
# (blasst::jit: the compiler in one archive, linking the shared libMLIR and
# libLLVM).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(BLASST_INSTALL_CMAKEDIR "${CMAKE_INSTALL_LIBDIR}/cmake/blasst")

function(blasst_install_library target name component)
  cmake_parse_arguments(ARG "NEEDS_MLIR" "" "" ${ARGN})
  set_target_properties(${target} PROPERTIES EXPORT_NAME ${name})
  if(NOT TARGET blasst::${name})
    add_library(blasst::${name} ALIAS ${target})
  endif()
  install(TARGETS ${target} EXPORT blasst-${component}-targets
    ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
    RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  set_property(GLOBAL APPEND PROPERTY BLASST_INSTALL_COMPONENTS ${component})
  if(ARG_NEEDS_MLIR)
    set_property(GLOBAL APPEND PROPERTY BLASST_MLIR_COMPONENTS ${component})
  endif()
endfunction()

# The BLASST* libraries `target` links, itself included, depth first.
function(_blasst_collect_libs target out)
  set(seen ${${out}})
  if(target IN_LIST seen OR NOT TARGET ${target} OR NOT target MATCHES "^BLASST")
    return()
  endif()
  list(APPEND seen ${target})
  get_target_property(deps ${target} LINK_LIBRARIES)
  foreach(dep IN LISTS deps)
    _blasst_collect_libs(${dep} seen)
  endforeach()
  set(${out} ${seen} PARENT_SCOPE)
endfunction()

# blasst::jit as one static archive: the objects of BLASSTJIT and of every
# compiler library it links (add_mlir_library keeps them as obj.<lib>),
# found by walking its link dependencies, so a new compiler library needs
# no change here. The spec and runtime stay their own (exported) archives.
function(blasst_add_jit_package target)
  _blasst_collect_libs(BLASSTJIT libs)
  add_library(${target} STATIC)
  foreach(lib IN LISTS libs)
    if(TARGET obj.${lib})
      target_sources(${target} PRIVATE $<TARGET_OBJECTS:obj.${lib}>)
    endif()
  endforeach()
  set_target_properties(${target} PROPERTIES OUTPUT_NAME blasst_jit
    LINKER_LANGUAGE CXX ARCHIVE_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/lib)
  target_include_directories(${target} INTERFACE
    $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
    $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  target_compile_features(${target} INTERFACE cxx_std_17)
  # The installed package adds LLVM's include directory (JIT.h includes
  # llvm/Support/Error.h) once it has found LLVM.
  target_link_libraries(${target} INTERFACE BLASSTRuntime MLIR LLVM)
endfunction()

function(blasst_install_finalize)
  get_property(components GLOBAL PROPERTY BLASST_INSTALL_COMPONENTS)
  get_property(mlirComponents GLOBAL PROPERTY BLASST_MLIR_COMPONENTS)
  list(REMOVE_DUPLICATES components)
  foreach(c IN LISTS components)
    install(EXPORT blasst-${c}-targets NAMESPACE blasst::
      FILE blasst-${c}-targets.cmake DESTINATION ${BLASST_INSTALL_CMAKEDIR})
  endforeach()
  # Read by blasstConfig.cmake.in.
  set(BLASST_COMPONENTS "${components}")
  set(BLASST_MLIR_COMPONENTS "${mlirComponents}")
  configure_package_config_file(
    ${PROJECT_SOURCE_DIR}/cmake/blasstConfig.cmake.in
    ${PROJECT_BINARY_DIR}/cmake/blasstConfig.cmake
    INSTALL_DESTINATION ${BLASST_INSTALL_CMAKEDIR})
  write_basic_package_version_file(
    ${PROJECT_BINARY_DIR}/cmake/blasstConfigVersion.cmake
    VERSION ${BLASST_VERSION} COMPATIBILITY SameMinorVersion)
  install(FILES ${PROJECT_BINARY_DIR}/cmake/blasstConfig.cmake
    ${PROJECT_BINARY_DIR}/cmake/blasstConfigVersion.cmake
    DESTINATION ${BLASST_INSTALL_CMAKEDIR})
endfunction()
