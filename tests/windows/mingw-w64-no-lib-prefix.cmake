# Loaded by tests/windows/mingw-w64-x86_64-posix.cmake as
# CMAKE_USER_MAKE_RULES_OVERRIDE, after CMake's Windows-GNU platform file:
# DLLs without its "lib" prefix (llama.dll, not libllama.dll), as
# llama.cpp's Windows releases name them and as Windows programs expect.
# The import libraries keep theirs (libllama.dll.a).
set(CMAKE_SHARED_LIBRARY_PREFIX "")
