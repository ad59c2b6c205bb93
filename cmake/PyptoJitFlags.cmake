# Records the compiler and flags this build used, so JIT kernel builds (pypto.kernel_build)
# compile kernels with the same toolchain as the library they link against.
set(PYPTO_JIT_CXX_FLAGS "-std=c++17;-O2;-fPIC;-fno-math-errno")

# out_var = the items of the list `items` as JSON strings: "a", "b" (no brackets).
function(pypto_json_strings out_var items)
  set(json "")
  foreach(item IN LISTS items)
    string(APPEND json "\"${item}\", ")
  endforeach()
  string(REGEX REPLACE ", $" "" json "${json}")
  set(${out_var} "${json}" PARENT_SCOPE)
endfunction()

function(pypto_write_build_info out_file)
  pypto_json_strings(flags_json "${PYPTO_JIT_CXX_FLAGS}")
  # Where pypto_add_kernel_pch installs the precompiled kernel.hpp (gcc builds only).
  set(pch_json "")
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    set(pch_json "\n  \"pch_dir\": \"pch\",")
  endif()
  file(WRITE "${out_file}" "{
  \"cxx\": \"${CMAKE_CXX_COMPILER}\",
  \"compiler_id\": \"${CMAKE_CXX_COMPILER_ID} ${CMAKE_CXX_COMPILER_VERSION}\",
  \"cxx_flags\": [${flags_json}],
  \"ldflags\": [\"-shared\"],
  \"include_dir\": \"include\",
  \"lib_dir\": \".\",${pch_json}
  \"libs\": [\"pypto_sim\"],
  \"version\": \"${PROJECT_VERSION}\",
  \"abi_version\": 1
}
")
endfunction()
