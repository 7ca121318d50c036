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
  # cgram.dll in bin/, with its import libraries in lib/: cgram.lib for MSVC
  # (and clang-cl), libcgram.dll.a for MinGW (either works there).
  find_file(cgram_DLL NAMES cgram.dll
            PATHS "${_cgram_prefix}/bin" "${_cgram_prefix}/lib" NO_DEFAULT_PATH NO_CMAKE_FIND_ROOT_PATH)
  if(MSVC)
    set(_cgram_implib_names cgram.lib libcgram.dll.a)
  else()
    set(_cgram_implib_names libcgram.dll.a cgram.lib)
  endif()
  find_file(cgram_LIBRARY NAMES ${_cgram_implib_names}
            PATHS "${_cgram_prefix}/lib" NO_DEFAULT_PATH NO_CMAKE_FIND_ROOT_PATH)
  set(_cgram_static_names libcgram.a)
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
  # libcgram.so and libcgram.dylib are links to the versioned file, whose
  # SONAME / install name (libcgram.so.0, @rpath/libcgram.0.dylib) is what
  # programs record: they keep working across compatible upgrades.
  set_target_properties(cgram::cgram PROPERTIES IMPORTED_LOCATION "${cgram_LIBRARY}")
endif()

# The static library, when installed, with the system libraries Rust's
# standard library needs.
find_file(cgram_STATIC_LIBRARY NAMES ${_cgram_static_names}
          PATHS "${_cgram_prefix}/lib" NO_DEFAULT_PATH NO_CMAKE_FIND_ROOT_PATH)
if(cgram_STATIC_LIBRARY)
  add_library(cgram::cgram_static STATIC IMPORTED)
  # CGRAM_STATIC: on Windows, cgram.h declares the functions without
  # __declspec(dllimport).
  set_target_properties(cgram::cgram_static PROPERTIES
    IMPORTED_LOCATION "${cgram_STATIC_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${cgram_INCLUDE_DIR}"
    INTERFACE_COMPILE_DEFINITIONS CGRAM_STATIC)
  # What `--print native-static-libs` lists for each system (as
  # scripts/install.sh writes them into cgram.pc).
  if(WIN32)
    set(_cgram_system_libs psapi shell32 user32 advapi32 bcrypt kernel32 ntdll userenv ws2_32 dbghelp)
  elseif(APPLE)
    set(_cgram_system_libs iconv System c m)
  else()
    set(_cgram_system_libs gcc_s util rt pthread m dl c)
  endif()
  set_target_properties(cgram::cgram_static PROPERTIES
    INTERFACE_LINK_LIBRARIES "${_cgram_system_libs}")
endif()

set(cgram_FOUND TRUE)
unset(_cgram_prefix)
unset(_cgram_static_names)
unset(_cgram_implib_names)
unset(_cgram_system_libs)
