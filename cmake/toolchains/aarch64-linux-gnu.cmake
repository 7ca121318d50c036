# CMake toolchain file: build for Linux aarch64 from Linux x86-64 with
# Debian's gcc-aarch64-linux-gnu; programs run under qemu-user:
#
#   cmake -S c-examples -B build/arm \
#         -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/aarch64-linux-gnu.cmake \
#         -DCMAKE_PREFIX_PATH=<aarch64 cgram prefix>
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64 -L /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
# Packages (cgram's) are found where CMAKE_PREFIX_PATH says, as given.
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)
