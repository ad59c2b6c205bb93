# Records the compiler and flags this build used, so JIT kernel builds (pypto.runtime.build)
# compile kernels with the same toolchain as the library they link against.
set(PYPTO_JIT_CXX_FLAGS "-std=c++17;-O2;-fPIC;-fno-math-errno")

function(pypto_write_build_info out_file)
  set(flags_json "")
  foreach(flag IN LISTS PYPTO_JIT_CXX_FLAGS)
    string(APPEND flags_json "\"${flag}\", ")
  endforeach()
  string(REGEX REPLACE ", $" "" flags_json "${flags_json}")
  file(WRITE "${out_file}" "{
  \"cxx\": \"${CMAKE_CXX_COMPILER}\",
  \"compiler_id\": \"${CMAKE_CXX_COMPILER_ID} ${CMAKE_CXX_COMPILER_VERSION}\",
  \"cxx_flags\": [${flags_json}],
  \"ldflags\": [\"-shared\"],
  \"include_dir\": \"include\",
  \"lib_dir\": \".\",
  \"libs\": [\"pypto_sim\"],
  \"version\": \"${PROJECT_VERSION}\",
  \"abi_version\": 1
}
")
endfunction()
