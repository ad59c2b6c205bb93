# A precompiled <pypto/kernel.hpp> for generated kernels: parsing the header is a large share of
# a small kernel's compile. It is built with the compiler and exact flags generated kernels get
# (PYPTO_JIT_CXX_FLAGS + PYPTO_JIT_GENERATED_CXX_FLAGS) and installed as
# pypto/pch/pypto/kernel.hpp.gch; the runtime puts -I<pch> before the header's folder only when
# the stamp written beside it (compiler, flags, gch size, sha256 of every header) matches, so a
# stale, truncated or missing gch only costs speed. gcc only: clang does not use .gch on #include.
# Beside the gch sits a kernel.hpp that forwards to the real one: gcc reads the gch only for a
# translation unit's first #include, and a second one (mixed kernels join two generated units)
# must still find a header in the folder where it found the gch.
set(PYPTO_JIT_GENERATED_CXX_FLAGS "-O1")  # pypto.kernel_build.commands.GENERATED_CXX_FLAGS

function(pypto_add_kernel_pch)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    return()
  endif()
  # The kernel headers: the source tree's and the generated ones (installed into one folder).
  set(inc "${CMAKE_CURRENT_SOURCE_DIR}/csrc/include" "${PYPTO_GEN_INCLUDE}")
  set(out "${CMAKE_CURRENT_BINARY_DIR}/pch")
  set(flags ${PYPTO_JIT_CXX_FLAGS} ${PYPTO_JIT_GENERATED_CXX_FLAGS})
  file(GLOB_RECURSE headers CONFIGURE_DEPENDS "${CMAKE_CURRENT_SOURCE_DIR}/csrc/include/*")
  list(APPEND headers ${PYPTO_FAMILY_HEADERS})
  list(TRANSFORM inc PREPEND "-I" OUTPUT_VARIABLE inc_flags)
  # Precompiled from a one-line wrapper: gcc 12 warns "#pragma once in main file" otherwise.
  file(WRITE "${out}/kernel_pch.hpp" "#include <pypto/kernel.hpp>\n")
  file(WRITE "${out}/pypto/kernel.hpp" "#include_next <pypto/kernel.hpp>\n")
  add_custom_command(
    OUTPUT "${out}/pypto/kernel.hpp.gch" "${out}/stamp.json"
    COMMAND "${CMAKE_COMMAND}" -E make_directory "${out}/pypto"
    COMMAND "${CMAKE_CXX_COMPILER}" ${flags} ${inc_flags} -x c++-header "${out}/kernel_pch.hpp"
            -o "${out}/pypto/kernel.hpp.gch"
    COMMAND "${CMAKE_COMMAND}" "-DCXX=${CMAKE_CXX_COMPILER}" "-DFLAGS=${flags}" "-DINCLUDE_DIRS=${inc}"
            "-DOUT=${out}" -P "${CMAKE_CURRENT_FUNCTION_LIST_DIR}/PyptoKernelPchStamp.cmake"
    DEPENDS ${headers} "${CMAKE_CURRENT_FUNCTION_LIST_DIR}/PyptoKernelPchStamp.cmake"
    COMMENT "Precompiling pypto/kernel.hpp for generated kernels"
    VERBATIM)
  add_custom_target(pypto_kernel_pch ALL DEPENDS "${out}/pypto/kernel.hpp.gch" "${out}/stamp.json")
  install(FILES "${out}/pypto/kernel.hpp.gch" "${out}/pypto/kernel.hpp" DESTINATION pypto/pch/pypto)
  install(FILES "${out}/stamp.json" DESTINATION pypto/pch)
endfunction()
