/*
 * bcryptprimitives.dll for Wine 8.0, which does not ship it.
 *
 * Go's Windows runtime (Go >= 1.22) takes its random bytes from ProcessPrng in
 * bcryptprimitives.dll and aborts at start ("bcryptprimitives.dll not found") where the DLL is
 * missing, as under Debian 12's Wine 8.0. This DLL exports ProcessPrng with the documented
 * signature and fills the buffer from advapi32's SystemFunction036 (RtlGenRandom), which Wine
 * implements over the host's random source. It exists only so that Windows builds of Go programs
 * run under Wine here (scripts/winetest, scripts/windows-build.sh); nothing ships it.
 *
 * Built by scripts/wine-prefix.sh with Debian's gcc-mingw-w64-x86-64:
 *   x86_64-w64-mingw32-gcc -shared -O2 -o bcryptprimitives.dll bcryptprimitives.c -ladvapi32
 */
#include <windows.h>

/* RtlGenRandom; advapi32 exports it under this name. */
BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

/* ProcessPrng fills data with cb random bytes and always returns TRUE, as documented
 * (https://learn.microsoft.com/windows/win32/seccng/processprng). SystemFunction036 takes a
 * ULONG length, so larger requests are filled in pieces; a failing call is fatal because
 * callers rely on ProcessPrng never failing. */
__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T cb)
{
	while (cb > 0) {
		ULONG n = cb > 0x40000000 ? 0x40000000 : (ULONG)cb;
		if (!SystemFunction036(data, n))
			ExitProcess(2);
		data += n;
		cb -= n;
	}
	return TRUE;
}
