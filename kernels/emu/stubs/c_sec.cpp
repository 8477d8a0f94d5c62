// cannbuild sandbox: the bounds-checked memory functions of libc_sec that the
// operator examples link against.
#include <cerrno>
#include <cstring>

extern "C" {

int memcpy_s(void *dest, size_t destMax, const void *src, size_t count) {
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
