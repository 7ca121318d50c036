# `cmake --install` of the Windows drop-in (CMakeLists.txt beside this file
# sets the CGRAM_* variables): llama.cpp's DLL is renamed
# llama-cgram-original.dll, unless that was done before (the DLL in place
# is the proxy already), and the proxy is copied in its place. A llama.dll
# that is not the proxy while an original exists is a llama.cpp upgrade
# over the proxy: it becomes the original.
execute_process(COMMAND "${CGRAM_PYTHON}" "${CGRAM_TOOL}" is-proxy "${CGRAM_LLAMA_DLL}"
                RESULT_VARIABLE _is_proxy OUTPUT_QUIET ERROR_QUIET)
if(NOT _is_proxy EQUAL 0)
  message(STATUS "Renaming ${CGRAM_LLAMA_DLL} to ${CGRAM_ORIGINAL}")
  file(REMOVE "${CGRAM_ORIGINAL}")
  file(RENAME "${CGRAM_LLAMA_DLL}" "${CGRAM_ORIGINAL}")
endif()
message(STATUS "Installing the cgram proxy: ${CGRAM_LLAMA_DLL}")
execute_process(COMMAND "${CMAKE_COMMAND}" -E copy "${CGRAM_PROXY}" "${CGRAM_LLAMA_DLL}"
                RESULT_VARIABLE _rc)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "could not copy ${CGRAM_PROXY} to ${CGRAM_LLAMA_DLL} (is a program using it?)")
endif()
# MSVC: the proxy links cgram.dll.
if(CGRAM_EXTRA_DLL)
  get_filename_component(_dir "${CGRAM_LLAMA_DLL}" DIRECTORY)
  execute_process(COMMAND "${CMAKE_COMMAND}" -E copy "${CGRAM_EXTRA_DLL}" "${_dir}/")
endif()
