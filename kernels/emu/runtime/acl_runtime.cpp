// cannbuild sandbox: a CPU implementation of the AscendCL runtime subset.
//
// "Device" memory is host memory handed out by aclrtMalloc and tracked, so a
// program that passes a host pointer where a device pointer belongs fails here
// the way it would on an NPU.  The NPU count and SoC name come from
// <toolkit>/<arch>-linux/conf/sandbox_npu.ini, written by `cannbuild sandbox create`.

#include <dlfcn.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <string>

#include "acl/acl.h"
#include "emu/emu_runtime.h"
#include "emu/half.h"

namespace {

struct DeviceConfig {
    int devices = 0;
    std::string soc;
};

std::mutex g_mutex;
bool g_initialised = false;
bool g_finalised = false;
int g_current_device = -1;
std::map<uintptr_t, size_t> g_blocks;  // base -> usable size
std::set<void *> g_host_blocks;
std::set<void *> g_streams;
thread_local std::string g_recent_error;

void SetError(const char *fmt, ...) {
    char buf[1024];
    va_list args;
    va_start(args, fmt);
    vsnprintf(buf, sizeof(buf), fmt, args);
    va_end(args);
    g_recent_error = buf;
}

std::string LibraryDir() {
    Dl_info info;
    if (dladdr(reinterpret_cast<void *>(&LibraryDir), &info) == 0 || info.dli_fname == nullptr) {
        return ".";
    }
    std::string path = info.dli_fname;
    size_t slash = path.rfind('/');
    return slash == std::string::npos ? "." : path.substr(0, slash);
}

const DeviceConfig &Config() {
    static DeviceConfig config = [] {
        DeviceConfig c;
        std::ifstream in(LibraryDir() + "/../conf/sandbox_npu.ini");
        std::string line;
        while (std::getline(in, line)) {
            size_t eq = line.find('=');
            if (eq == std::string::npos) continue;
            std::string key = line.substr(0, eq);
            std::string value = line.substr(eq + 1);
            if (key == "devices") c.devices = std::atoi(value.c_str());
            if (key == "soc") c.soc = value;
        }
        return c;
    }();
    return config;
}

bool IsDeviceRangeLocked(const void *ptr, size_t bytes) {
    uintptr_t p = reinterpret_cast<uintptr_t>(ptr);
    auto it = g_blocks.upper_bound(p);
    if (it == g_blocks.begin()) return false;
    --it;
    return p >= it->first && p + bytes <= it->first + it->second;
}

aclError RequireDevice(const char *api) {
    if (!g_initialised) {
        SetError("EE1001: %s called before aclInit", api);
        return ACL_ERROR_UNINITIALIZE;
    }
    if (g_current_device < 0) {
        SetError("EE1001: %s called before aclrtSetDevice", api);
        return ACL_ERROR_RT_INVALID_DEVICEID;
    }
    return ACL_SUCCESS;
}

}  // namespace

extern "C" {

void aclemuSetRecentErrMsg(const char *msg) { g_recent_error = msg ? msg : ""; }

int aclemuIsDeviceRange(const void *ptr, size_t bytes) {
    std::lock_guard<std::mutex> lock(g_mutex);
    return IsDeviceRangeLocked(ptr, bytes) ? 1 : 0;
}

int aclemuDeviceCount(void) { return Config().devices; }

aclError aclInit(const char *configPath) {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (g_initialised) {
        SetError("EH0001: aclInit can be called only once in a process");
        return ACL_ERROR_REPEAT_INITIALIZE;
    }
    if (configPath != nullptr && configPath[0] != '\0') {
        std::ifstream in(configPath);
        if (!in) {
            SetError("EH0001: config file %s cannot be read", configPath);
            return ACL_ERROR_INVALID_PARAM;
        }
    }
    g_initialised = true;
    g_finalised = false;
    return ACL_SUCCESS;
}

aclError aclFinalize() {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (!g_initialised || g_finalised) {
        SetError("EH0001: aclFinalize without a matching aclInit");
        return ACL_ERROR_REPEAT_FINALIZE;
    }
    g_finalised = true;
    g_initialised = false;
    return ACL_SUCCESS;
}

const char *aclGetRecentErrMsg() { return g_recent_error.c_str(); }

const char *aclrtGetSocName() {
    const std::string &soc = Config().soc;
    return soc.empty() ? nullptr : soc.c_str();
}

aclError aclrtSetDevice(int32_t deviceId) {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (!g_initialised) {
        SetError("EE1001: aclrtSetDevice called before aclInit");
        return ACL_ERROR_UNINITIALIZE;
    }
    int count = Config().devices;
    if (deviceId < 0 || deviceId >= count) {
        SetError("EE1001: device id %d is invalid, the number of NPUs visible is %d", deviceId, count);
        return ACL_ERROR_RT_INVALID_DEVICEID;
    }
    g_current_device = deviceId;
    return ACL_SUCCESS;
}

aclError aclrtResetDevice(int32_t deviceId) {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (deviceId != g_current_device) {
        SetError("EE1001: device %d was not set", deviceId);
        return ACL_ERROR_RT_INVALID_DEVICEID;
    }
    g_current_device = -1;
    return ACL_SUCCESS;
}

aclError aclrtGetDevice(int32_t *deviceId) {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (deviceId == nullptr) return ACL_ERROR_INVALID_PARAM;
    if (g_current_device < 0) {
        SetError("EE1001: no device is set");
        return ACL_ERROR_RT_INVALID_DEVICEID;
    }
    *deviceId = g_current_device;
    return ACL_SUCCESS;
}

aclError aclrtGetDeviceCount(uint32_t *count) {
    if (count == nullptr) return ACL_ERROR_INVALID_PARAM;
    *count = static_cast<uint32_t>(Config().devices);
    return ACL_SUCCESS;
}

aclError aclrtSynchronizeDevice(void) {
    std::lock_guard<std::mutex> lock(g_mutex);
    return RequireDevice("aclrtSynchronizeDevice");
}

aclError aclrtCreateStream(aclrtStream *stream) {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (stream == nullptr) {
        SetError("EH0002: stream cannot be nullptr");
        return ACL_ERROR_INVALID_PARAM;
    }
    aclError err = RequireDevice("aclrtCreateStream");
    if (err != ACL_SUCCESS) return err;
    void *handle = std::malloc(1);
    g_streams.insert(handle);
    *stream = handle;
    return ACL_SUCCESS;
}

aclError aclrtDestroyStream(aclrtStream stream) {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (g_streams.erase(stream) == 0) {
        SetError("EH0002: stream %p is not a stream created by aclrtCreateStream", stream);
        return ACL_ERROR_INVALID_PARAM;
    }
    std::free(stream);
    return ACL_SUCCESS;
}

aclError aclrtSynchronizeStream(aclrtStream stream) {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (stream != nullptr && g_streams.count(stream) == 0) {
        SetError("EH0002: stream %p is not a stream created by aclrtCreateStream", stream);
        return ACL_ERROR_INVALID_PARAM;
    }
    return ACL_SUCCESS;  // operators run synchronously on the CPU
}

aclError aclrtMalloc(void **devPtr, size_t size, aclrtMemMallocPolicy policy) {
    (void)policy;
    std::lock_guard<std::mutex> lock(g_mutex);
    if (devPtr == nullptr || size == 0) {
        SetError("EH0002: aclrtMalloc needs a pointer and a non-zero size");
        return ACL_ERROR_INVALID_PARAM;
    }
    aclError err = RequireDevice("aclrtMalloc");
    if (err != ACL_SUCCESS) return err;
    // Real allocations are 32-byte aligned and padded with 32 bytes.
    size_t padded = ((size + 31) / 32) * 32 + 32;
    void *p = nullptr;
    if (posix_memalign(&p, 64, padded) != 0) {
        SetError("EL0004: failed to allocate %zu bytes of device memory", size);
        return ACL_ERROR_RT_MEMORY_ALLOCATION;
    }
    std::memset(p, 0xA5, padded);  // device memory is not zeroed
    g_blocks[reinterpret_cast<uintptr_t>(p)] = padded;
    *devPtr = p;
    return ACL_SUCCESS;
}

aclError aclrtFree(void *devPtr) {
    std::lock_guard<std::mutex> lock(g_mutex);
    auto it = g_blocks.find(reinterpret_cast<uintptr_t>(devPtr));
    if (it == g_blocks.end()) {
        SetError("EH0002: %p was not allocated by aclrtMalloc", devPtr);
        return ACL_ERROR_INVALID_PARAM;
    }
    g_blocks.erase(it);
    std::free(devPtr);
    return ACL_SUCCESS;
}

aclError aclrtMallocHost(void **hostPtr, size_t size) {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (hostPtr == nullptr || size == 0) return ACL_ERROR_INVALID_PARAM;
    *hostPtr = std::malloc(size);
    if (*hostPtr == nullptr) return ACL_ERROR_BAD_ALLOC;
    g_host_blocks.insert(*hostPtr);
    return ACL_SUCCESS;
}

aclError aclrtFreeHost(void *hostPtr) {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (g_host_blocks.erase(hostPtr) == 0) return ACL_ERROR_INVALID_PARAM;
    std::free(hostPtr);
    return ACL_SUCCESS;
}

aclError aclrtMemcpy(void *dst, size_t destMax, const void *src, size_t count, aclrtMemcpyKind kind) {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (dst == nullptr || src == nullptr) {
        SetError("EH0002: aclrtMemcpy dst and src cannot be nullptr");
        return ACL_ERROR_INVALID_PARAM;
    }
    if (count > destMax) {
        SetError("EH0002: aclrtMemcpy count %zu is larger than destMax %zu", count, destMax);
        return ACL_ERROR_INVALID_PARAM;
    }
    bool dst_dev = IsDeviceRangeLocked(dst, count);
    bool src_dev = IsDeviceRangeLocked(src, count);
    bool ok = true;
    switch (kind) {
        case ACL_MEMCPY_HOST_TO_HOST: ok = !dst_dev && !src_dev; break;
        case ACL_MEMCPY_HOST_TO_DEVICE: ok = dst_dev && !src_dev; break;
        case ACL_MEMCPY_DEVICE_TO_HOST: ok = !dst_dev && src_dev; break;
        case ACL_MEMCPY_DEVICE_TO_DEVICE: ok = dst_dev && src_dev; break;
        case ACL_MEMCPY_DEFAULT: ok = true; break;
        default:
            SetError("EH0002: aclrtMemcpy kind %d is not supported", static_cast<int>(kind));
            return ACL_ERROR_INVALID_PARAM;
    }
    if (!ok) {
        SetError("EE1001: aclrtMemcpy kind %d does not match the memory passed (dst %s, src %s)",
                 static_cast<int>(kind), dst_dev ? "device" : "host", src_dev ? "device" : "host");
        return ACL_ERROR_RT_PARAM_INVALID;
    }
    std::memmove(dst, src, count);
    return ACL_SUCCESS;
}

aclError aclrtMemcpyAsync(void *dst, size_t destMax, const void *src, size_t count, aclrtMemcpyKind kind,
                          aclrtStream stream) {
    {
        std::lock_guard<std::mutex> lock(g_mutex);
        if (stream != nullptr && g_streams.count(stream) == 0) {
            SetError("EH0002: stream %p is not a stream created by aclrtCreateStream", stream);
            return ACL_ERROR_INVALID_PARAM;
        }
    }
    return aclrtMemcpy(dst, destMax, src, count, kind);
}

aclError aclrtMemset(void *devPtr, size_t maxCount, int32_t value, size_t count) {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (devPtr == nullptr || count > maxCount) return ACL_ERROR_INVALID_PARAM;
    if (!IsDeviceRangeLocked(devPtr, count)) {
        SetError("EE1001: aclrtMemset target %p is not device memory", devPtr);
        return ACL_ERROR_RT_PARAM_INVALID;
    }
    std::memset(devPtr, value, count);
    return ACL_SUCCESS;
}

size_t aclDataTypeSize(aclDataType dataType) {
    switch (dataType) {
        case ACL_FLOAT: case ACL_INT32: case ACL_UINT32: return 4;
        case ACL_FLOAT16: case ACL_BF16: case ACL_INT16: case ACL_UINT16: return 2;
        case ACL_INT8: case ACL_UINT8: case ACL_BOOL: case ACL_HIFLOAT8:
        case ACL_FLOAT8_E5M2: case ACL_FLOAT8_E4M3FN: case ACL_FLOAT8_E8M0: return 1;
        case ACL_INT64: case ACL_UINT64: case ACL_DOUBLE: case ACL_COMPLEX64: return 8;
        case ACL_COMPLEX128: return 16;
        case ACL_COMPLEX32: return 4;
        default: return 0;
    }
}

float aclFloat16ToFloat(aclFloat16 value) { return emu::HalfToFloat(value); }

aclFloat16 aclFloatToFloat16(float value) { return emu::FloatToHalf(value); }

}  // extern "C"
