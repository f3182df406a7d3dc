/*
 * duet_copy: the byte mover of the shm transport.
 *
 * Up to a few MiB, libc's memcpy is as fast as anything (the data stays in cache). Past
 * the last-level cache, a copy through the cache reads every destination line before
 * overwriting it; non-temporal stores skip that read and the cache pollution. Measured on
 * the 2-core EPYC dev machine (docs/PERF.md): 64 MiB copies at ~11 GB/s with memcpy and
 * ~18 GB/s with streaming stores; at 16 MiB ~16 vs ~25 GB/s.
 */
#include <string.h>
#include "duet_util.h"
#if defined(__x86_64__)
#include <emmintrin.h>
#endif


#if defined(__x86_64__)
static void copy_stream(char *dst, const char *src, size_t n)
{
    size_t head = (16 - ((uintptr_t)dst & 15)) & 15; /* streaming stores need 16-byte alignment */
    memcpy(dst, src, head);
    dst += head;
    src += head;
    n -= head;
    size_t i = 0;
    for (; i + 64 <= n; i += 64) {
        __m128i a = _mm_loadu_si128((const __m128i *)(const void *)(src + i));
        __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(src + i + 16));
        __m128i c = _mm_loadu_si128((const __m128i *)(const void *)(src + i + 32));
        __m128i d = _mm_loadu_si128((const __m128i *)(const void *)(src + i + 48));
        _mm_stream_si128((__m128i *)(void *)(dst + i), a);
        _mm_stream_si128((__m128i *)(void *)(dst + i + 16), b);
        _mm_stream_si128((__m128i *)(void *)(dst + i + 32), c);
        _mm_stream_si128((__m128i *)(void *)(dst + i + 48), d);
    }
    _mm_sfence(); /* streaming stores are weakly ordered: order them before what follows */
    memcpy(dst + i, src + i, n - i);
}
#endif

void duet_copy_stream(void *dst, const void *src, size_t n)
{
#if defined(__x86_64__)
    if (n >= 64) {
        copy_stream(dst, src, n);
        return;
    }
#endif
    memcpy(dst, src, n);
}

void duet_copy_large_(void *dst, const void *src, size_t n)
{
#if defined(__x86_64__)
    if (n >= DUET_COPY_STREAM_MIN) {
        copy_stream(dst, src, n);
        return;
    }
#endif
    memcpy(dst, src, n);
}
