# CMake toolchain file: llama.cpp for Windows x86-64, cross-compiled from
# Linux with Debian's MinGW-w64, for the tests of cgram's Windows drop-in
# (scripts/lib/llama-build-windows.sh uses it).
#
# Debian's MinGW gcc 12 comes in two thread models; the default
# (x86_64-w64-mingw32-gcc, "win32") has no std::thread or std::mutex in
# its libstdc++, which llama.cpp needs. The "posix" variant (on
# winpthreads) has them. Its compilers are named here explicitly, so that
# nothing depends on update-alternatives. cmake/toolchains/mingw-w64-x86_64.cmake
# stays the one for plain C (cgram's examples, the drop-in itself).
#
# The programs and DLLs this builds need the MinGW runtime DLLs
# (libstdc++-6.dll, libgcc_s_seh-1.dll, libwinpthread-1.dll) beside them:
# llama.cpp's DLLs pass C++ objects and exceptions to each other, which is
# safest with one shared C++ runtime; the build script copies them.
set(CMAKE_SYSTEM_NAME Windows)
set(CMAKE_SYSTEM_PROCESSOR x86_64)
set(CMAKE_C_COMPILER x86_64-w64-mingw32-gcc-posix)
set(CMAKE_CXX_COMPILER x86_64-w64-mingw32-g++-posix)
set(CMAKE_RC_COMPILER x86_64-w64-mingw32-windres)
set(CMAKE_CROSSCOMPILING_EMULATOR wine)
# llama.dll rather than MinGW's libllama.dll: the name of llama.cpp's
# releases, the one the drop-in is tested under (it handles both).
set(CMAKE_USER_MAKE_RULES_OVERRIDE ${CMAKE_CURRENT_LIST_DIR}/mingw-w64-no-lib-prefix.cmake)
set(CMAKE_FIND_ROOT_PATH /usr/x86_64-w64-mingw32)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)
