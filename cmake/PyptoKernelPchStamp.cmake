# cmake -DCXX=... -DFLAGS=a;b -DINCLUDE_DIR=... -DOUT=<pch dir> -P PyptoKernelPchStamp.cmake
# Writes <pch dir>/stamp.json: what pypto/pch/pypto/kernel.hpp.gch was built from, which the
# runtime (pypto.runtime.toolchain) checks before letting gcc use it.
include("${CMAKE_CURRENT_LIST_DIR}/PyptoJitFlags.cmake")
file(SIZE "${OUT}/pypto/kernel.hpp.gch" gch_size)
pypto_json_strings(flags_json "${FLAGS}")
file(GLOB_RECURSE headers RELATIVE "${INCLUDE_DIR}" "${INCLUDE_DIR}/*")
list(SORT headers)
set(headers_json "")
foreach(header IN LISTS headers)
  file(SHA256 "${INCLUDE_DIR}/${header}" sha)
  string(APPEND headers_json "\n    \"${header}\": \"${sha}\",")
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
