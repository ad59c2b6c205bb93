# Use ccache when the machine has it; builds stay correct without it.
find_program(PYPTO_CCACHE ccache)
if(PYPTO_CCACHE AND NOT CMAKE_CXX_COMPILER_LAUNCHER)
  set(CMAKE_CXX_COMPILER_LAUNCHER "${PYPTO_CCACHE}")
  message(STATUS "pypto: using ccache at ${PYPTO_CCACHE}")
endif()
