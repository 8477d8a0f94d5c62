// cannbuild sandbox: the bounds-checked memory functions of libc_sec that the
// operator examples and the stand-in op_api link against (declared in the sandbox
// toolkit's securec.h, kernels/toolkit/include/securec.h).
#include <cerrno>
#include <cstring>

extern "C" {

int memcpy_s(void *dest, size_t destMax, const void *src, size_t count) {
    if (dest == nullptr || src == nullptr || count > destMax) return EINVAL;
    std::memmove(dest, src, count);
    return 0;
}

int memmove_s(void *dest, size_t destMax, const void *src, size_t count) {
    if (dest == nullptr || src == nullptr || count > destMax) return EINVAL;
    std::memmove(dest, src, count);
    return 0;
}

int memset_s(void *dest, size_t destMax, int c, size_t count) {
    if (dest == nullptr || count > destMax) return EINVAL;
    std::memset(dest, c, count);
    return 0;
}

}  // extern "C"
