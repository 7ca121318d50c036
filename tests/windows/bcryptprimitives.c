/*
 * A stand-in for Windows' bcryptprimitives.dll, for running cgram.dll under
 * Debian's wine 8, which lacks it. Test use only: never shipped.
 *
 * Rust's standard library (1.78 and later) takes its random numbers (the
 * seeds of HashMap) from ProcessPrng, which bcryptprimitives.dll exports on
 * Windows 10 and later; wine added the DLL in version 9. This one answers
 * ProcessPrng with RtlGenRandom (advapi32's SystemFunction036), which wine
 * 8 has. scripts/cross.sh builds it with mingw-w64 and puts it on WINEPATH
 * beside cgram.dll.
 */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T length)
{
    while (length > 0) {
        ULONG chunk = length > 0x10000000 ? 0x10000000 : (ULONG)length;
        if (!SystemFunction036(data, chunk))
            return FALSE;
        data += chunk;
        length -= chunk;
    }
    return TRUE;
}
