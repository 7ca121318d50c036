/*
 * Forced into every C file of the Windows llama.cpp test build
 * (scripts/lib/llama-build-windows.sh: -include this file): what Debian's
 * MinGW-w64 headers (10.0) lack and llama.cpp's ggml-cpu.c uses.
 *
 * ggml_thread_apply_priority turns off Windows 11's power throttling of
 * its threads with SetThreadInformation(ThreadPowerThrottling, ...);
 * MinGW-w64 10 declares the function and the enum value but not the
 * struct nor its constants (later MinGW-w64 releases do). They are
 * Windows' documented layout (processthreadsapi.h). Plain C types, so
 * that this header needs no <windows.h> before the file's own includes.
 */
#ifndef CGRAM_MINGW_W64_COMPAT_H
#define CGRAM_MINGW_W64_COMPAT_H
#if defined(__MINGW32__)
#include <_mingw.h>
#if defined(__MINGW64_VERSION_MAJOR) && __MINGW64_VERSION_MAJOR < 11 && \
    !defined(THREAD_POWER_THROTTLING_CURRENT_VERSION)
typedef struct _THREAD_POWER_THROTTLING_STATE {
    unsigned long Version;
    unsigned long ControlMask;
    unsigned long StateMask;
} THREAD_POWER_THROTTLING_STATE;
#define THREAD_POWER_THROTTLING_CURRENT_VERSION 1
#define THREAD_POWER_THROTTLING_EXECUTION_SPEED 0x1
#endif
#endif
#endif
