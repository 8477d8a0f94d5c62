/*
 * cannbuild sandbox: securec.h of the sandbox toolkit, the bounds-checked memory functions
 * of libboundscheck ("c_sec") that the emulated libc_sec.so implements
 * (kernels/emu/stubs/c_sec.cpp).  Declared as the public API of openeuler-mirror/libboundscheck
 * include/securec.h names them (errno_t, EOK, memset_s, memcpy_s, memmove_s); the library's
 * string and formatted-output functions are not declared here.
 */
#ifndef CANNBUILD_SANDBOX_SECUREC_H
#define CANNBUILD_SANDBOX_SECUREC_H

#include <errno.h>
#include <stddef.h>

#ifndef errno_t
typedef int errno_t;
#endif

#ifndef EOK
#define EOK 0
#endif

#ifdef __cplusplus
extern "C" {
#endif

errno_t memset_s(void *dest, size_t destMax, int c, size_t count);
errno_t memcpy_s(void *dest, size_t destMax, const void *src, size_t count);
errno_t memmove_s(void *dest, size_t destMax, const void *src, size_t count);

#ifdef __cplusplus
}
#endif

#endif  // CANNBUILD_SANDBOX_SECUREC_H
