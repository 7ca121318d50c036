# CMake toolchain file: build for Windows x86-64 from Linux with MinGW-w64
# (Debian's gcc-mingw-w64-x86-64). scripts/cross.sh builds the C examples
# with it against the Windows cgram package and runs them under wine:
#
#   cmake -S c-examples -B build/win \
#         -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/mingw-w64-x86_64.cmake \
#         -DCMAKE_PREFIX_PATH=<Windows cgram prefix>
set(CMAKE_SYSTEM_NAME Windows)
set(CMAKE_SYSTEM_PROCESSOR x86_64)
set(CMAKE_C_COMPILER x86_64-w64-mingw32-gcc)
set(CMAKE_CXX_COMPILER x86_64-w64-mingw32-g++)
set(CMAKE_RC_COMPILER x86_64-w64-mingw32-windres)
# Programs run where they are built, under wine (ctest, try_run).
set(CMAKE_CROSSCOMPILING_EMULATOR wine)
# Look for libraries and headers in the given prefixes only, never in the
# Linux system's; programs (cmake, pkg-config) are the host's.
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
# Packages (cgram's) are found where CMAKE_PREFIX_PATH says, as given.
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)
# A program should not need MinGW's runtime DLLs beside it.
set(CMAKE_C_STANDARD_LIBRARIES "-static-libgcc" CACHE STRING "" FORCE)
