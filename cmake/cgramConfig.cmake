# CMake package configuration for cgram, installed as
# <prefix>/lib/cmake/cgram/cgramConfig.cmake by scripts/install.sh.
#
#   find_package(cgram REQUIRED)
#   target_link_libraries(app PRIVATE cgram::cgram)          # shared library
#   target_link_libraries(app PRIVATE cgram::cgram_static)   # static, if installed
#
# Sets cgram_INCLUDE_DIR and cgram_LIBRARY too. The install prefix is found
# relative to this file, so an installed tree can be moved.

if(TARGET cgram::cgram)
  return()
endif()

get_filename_component(_cgram_prefix "${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)
set(cgram_INCLUDE_DIR "${_cgram_prefix}/include")

if(WIN32)
  # Rust's cdylib on Windows: cgram.dll (in bin/ or lib/) with the import
  # library cgram.dll.lib (MSVC) or libcgram.dll.a (GNU).
  find_file(cgram_DLL NAMES cgram.dll
            PATHS "${_cgram_prefix}/bin" "${_cgram_prefix}/lib" NO_DEFAULT_PATH)
  find_file(cgram_LIBRARY NAMES cgram.dll.lib libcgram.dll.a
            PATHS "${_cgram_prefix}/lib" NO_DEFAULT_PATH)
  set(_cgram_static_names cgram.lib libcgram.a)
elseif(APPLE)
  set(cgram_LIBRARY "${_cgram_prefix}/lib/libcgram.dylib")
  set(_cgram_static_names libcgram.a)
else()
  set(cgram_LIBRARY "${_cgram_prefix}/lib/libcgram.so")
  set(_cgram_static_names libcgram.a)
endif()

if(NOT EXISTS "${cgram_INCLUDE_DIR}/cgram.h" OR NOT cgram_LIBRARY OR NOT EXISTS "${cgram_LIBRARY}")
  set(cgram_FOUND FALSE)
  set(cgram_NOT_FOUND_MESSAGE
      "cgram: ${cgram_INCLUDE_DIR}/cgram.h or the library (${cgram_LIBRARY}) is missing under ${_cgram_prefix}")
  return()
endif()

add_library(cgram::cgram SHARED IMPORTED)
set_target_properties(cgram::cgram PROPERTIES
  INTERFACE_INCLUDE_DIRECTORIES "${cgram_INCLUDE_DIR}")
if(WIN32)
  set_target_properties(cgram::cgram PROPERTIES IMPORTED_IMPLIB "${cgram_LIBRARY}")
  if(cgram_DLL)
    set_target_properties(cgram::cgram PROPERTIES IMPORTED_LOCATION "${cgram_DLL}")
  endif()
else()
  set_target_properties(cgram::cgram PROPERTIES IMPORTED_LOCATION "${cgram_LIBRARY}")
  if(NOT APPLE)
    # Rust does not give libcgram.so a SONAME: link it as -lcgram so that
    # executables record "libcgram.so", not the absolute path.
    set_target_properties(cgram::cgram PROPERTIES IMPORTED_NO_SONAME TRUE)
  endif()
endif()

# The static library, when installed, with the system libraries Rust's
# standard library needs.
find_file(cgram_STATIC_LIBRARY NAMES ${_cgram_static_names}
          PATHS "${_cgram_prefix}/lib" NO_DEFAULT_PATH)
if(cgram_STATIC_LIBRARY)
  add_library(cgram::cgram_static STATIC IMPORTED)
  set_target_properties(cgram::cgram_static PROPERTIES
    IMPORTED_LOCATION "${cgram_STATIC_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${cgram_INCLUDE_DIR}")
  if(WIN32)
    set(_cgram_system_libs ws2_32 userenv ntdll bcrypt advapi32 kernel32)
  elseif(APPLE)
    set(_cgram_system_libs iconv m)
  else()
    set(_cgram_system_libs pthread dl m rt)
  endif()
  set_target_properties(cgram::cgram_static PROPERTIES
    INTERFACE_LINK_LIBRARIES "${_cgram_system_libs}")
endif()

set(cgram_FOUND TRUE)
unset(_cgram_prefix)
unset(_cgram_static_names)
unset(_cgram_system_libs)
