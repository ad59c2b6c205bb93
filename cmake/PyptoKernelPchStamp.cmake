# cmake -DCXX=... -DFLAGS=a;b -DINCLUDE_DIRS=a;b -DOUT=<pch dir> -P PyptoKernelPchStamp.cmake
# Writes <pch dir>/stamp.json: what pypto/pch/pypto/kernel.hpp.gch was built from, which the
# runtime (pypto.kernel_build.toolchain) checks before letting gcc use it.
include("${CMAKE_CURRENT_LIST_DIR}/PyptoJitFlags.cmake")
file(SIZE "${OUT}/pypto/kernel.hpp.gch" gch_size)
pypto_json_strings(flags_json "${FLAGS}")
# The headers of every folder by path relative to it, as they sit in the one installed folder.
set(headers "")
foreach(dir IN LISTS INCLUDE_DIRS)
  file(GLOB_RECURSE found RELATIVE "${dir}" "${dir}/*")
  foreach(header IN LISTS found)
    file(SHA256 "${dir}/${header}" "sha_${header}")
  endforeach()
  list(APPEND headers ${found})
endforeach()
list(SORT headers)
set(headers_json "")
foreach(header IN LISTS headers)
  string(APPEND headers_json "\n    \"${header}\": \"${sha_${header}}\",")
endforeach()
string(REGEX REPLACE ",$" "" headers_json "${headers_json}")
file(WRITE "${OUT}/stamp.json" "{
  \"cxx\": \"${CXX}\",
  \"flags\": [${flags_json}],
  \"gch\": \"pypto/kernel.hpp.gch\",
  \"gch_size\": ${gch_size},
  \"headers\": {${headers_json}\n  }
}
")
