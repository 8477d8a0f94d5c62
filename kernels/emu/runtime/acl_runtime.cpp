// cannbuild sandbox: a CPU implementation of the AscendCL runtime subset.
//
// "Device" memory is host memory handed out by aclrtMalloc and tracked, so a
// program that passes a host pointer where a device pointer belongs fails here
// the way it would on an NPU.  The NPU count and SoC name come from
// <toolkit>/<arch>-linux/conf/sandbox_npu.ini, written by `cannbuild sandbox create`.
//
// The second half implements the EMU_SEMANTIC entry points of
// entry_points.def that the real torch_npu needs (streams with config,
// events, contexts, memory and device info): every operator runs
// synchronously on the CPU, so a recorded event is complete and a stream
// never has pending work.

#include <dlfcn.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <climits>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "acl/acl.h"
#include "acl_rt_extra.h"
#include "emu/emu_runtime.h"
#include "emu_internal.h"
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
std::map<void *, int32_t> g_streams;  // handle -> stream id
int32_t g_next_stream_id = 0;
size_t g_device_bytes = 0;  // what aclrtMalloc handed out and not yet freed

struct Event {
    bool recorded = false;
    uint64_t ns = 0;
};
std::set<Event *> g_events;

struct Context {
    int device;
};
std::map<int, Context *> g_contexts;  // the default context of each device set
std::set<Context *> g_created_contexts;  // aclrtCreateContext's, until aclrtDestroyContext
Context *g_current_context = nullptr;
std::map<int, int64_t> g_sys_params;  // aclrtSetSysParamOpt values (deterministic, ...)
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

uint64_t NowNs() {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// Per-SoC device facts (AI Core / Vector Core counts, HBM and L2 bytes), from
// the Atlas A2 / A3 product sheets; enough for what torch_npu asks.
struct Chip {
    int64_t cube_cores;
    int64_t vector_cores;
    int64_t hbm_bytes;
    int64_t l2_bytes;
};

Chip ChipFacts(const std::string &soc) {
    const int64_t gib = 1024ll * 1024 * 1024;
    if (soc == "Ascend910B3" || soc == "Ascend910B4" || soc == "Ascend910B4-1")
        return {20, 40, 64 * gib, 192ll * 1024 * 1024};
    return {24, 48, 64 * gib, 192ll * 1024 * 1024};  // Ascend910B1/B2/B2C and the A3 dies
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

aclError CreateStream(aclrtStream *stream, const char *api) {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (stream == nullptr) {
        SetError("EH0002: stream cannot be nullptr");
        return ACL_ERROR_INVALID_PARAM;
    }
    aclError err = RequireDevice(api);
    if (err != ACL_SUCCESS) return err;
    void *handle = std::malloc(1);
    g_streams[handle] = g_next_stream_id++;
    *stream = handle;
    return ACL_SUCCESS;
}

bool KnownStreamLocked(aclrtStream stream, const char *api) {
    if (stream == nullptr || g_streams.count(stream) != 0) return true;  // nullptr: the default stream
    SetError("EH0002: %s: stream %p is not a stream created by aclrtCreateStream", api, stream);
    return false;
}

aclError DeviceMalloc(void **devPtr, size_t size, aclrtMemMallocPolicy policy, bool pad, const char *api) {
    (void)policy;
    std::lock_guard<std::mutex> lock(g_mutex);
    if (devPtr == nullptr || size == 0) {
        SetError("EH0002: %s needs a pointer and a non-zero size", api);
        return ACL_ERROR_INVALID_PARAM;
    }
    aclError err = RequireDevice(api);
    if (err != ACL_SUCCESS) return err;
    // aclrtMalloc is 32-byte aligned and padded with 32 bytes; aclrtMallocAlign32 is not padded.
    size_t padded = ((size + 31) / 32) * 32 + (pad ? 32 : 0);
    void *p = nullptr;
    if (posix_memalign(&p, 64, padded) != 0) {
        SetError("EL0004: failed to allocate %zu bytes of device memory", size);
        return ACL_ERROR_RT_MEMORY_ALLOCATION;
    }
    std::memset(p, 0xA5, padded);  // device memory is not zeroed
    g_blocks[reinterpret_cast<uintptr_t>(p)] = padded;
    g_device_bytes += padded;
    *devPtr = p;
    return ACL_SUCCESS;
}

}  // namespace

namespace emu {

int32_t StreamId(aclrtStream stream) {
    std::lock_guard<std::mutex> lock(g_mutex);
    auto it = g_streams.find(stream);
    return it == g_streams.end() ? 0 : it->second;
}

int CurrentDevice() {
    std::lock_guard<std::mutex> lock(g_mutex);
    return g_current_device < 0 ? 0 : g_current_device;
}

int64_t CubeCores() { return ChipFacts(Config().soc).cube_cores; }

int64_t VectorCores() { return ChipFacts(Config().soc).vector_cores; }

std::string CannVersion() {
    char real[PATH_MAX];
    std::string dir = realpath(LibraryDir().c_str(), real) != nullptr ? real : LibraryDir();
    std::ifstream in(dir + "/../ascend_toolkit_install.info");
    std::string line;
    while (std::getline(in, line))
        if (line.rfind("version=", 0) == 0) return line.substr(8);
    return "";
}

}  // namespace emu

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
    {
        std::lock_guard<std::mutex> lock(g_mutex);
        if (!g_initialised || g_finalised) {
            SetError("EH0001: aclFinalize without a matching aclInit");
            return ACL_ERROR_REPEAT_FINALIZE;
        }
        g_finalised = true;
        g_initialised = false;
    }
    emu::FlushProfile();  // the profiler's output, as the real one is written when profiling stops
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
    if (g_contexts.count(deviceId) == 0) g_contexts[deviceId] = new Context{deviceId};
    g_current_context = g_contexts[deviceId];
    return ACL_SUCCESS;
}

aclError aclrtResetDevice(int32_t deviceId) {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (deviceId != g_current_device) {
        SetError("EE1001: device %d was not set", deviceId);
        return ACL_ERROR_RT_INVALID_DEVICEID;
    }
    g_current_device = -1;
    g_current_context = nullptr;
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

aclError aclrtCreateStream(aclrtStream *stream) { return CreateStream(stream, "aclrtCreateStream"); }

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
    return DeviceMalloc(devPtr, size, policy, true, "aclrtMalloc");
}

aclError aclrtMallocAlign32(void **devPtr, size_t size, aclrtMemMallocPolicy policy) {
    return DeviceMalloc(devPtr, size, policy, false, "aclrtMallocAlign32");
}

aclError aclrtFree(void *devPtr) {
    std::lock_guard<std::mutex> lock(g_mutex);
    auto it = g_blocks.find(reinterpret_cast<uintptr_t>(devPtr));
    if (it == g_blocks.end()) {
        SetError("EH0002: %p was not allocated by aclrtMalloc", devPtr);
        return ACL_ERROR_INVALID_PARAM;
    }
    g_device_bytes -= it->second;
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

// ---- the EMU_SEMANTIC entry points of entry_points.def ----

aclError aclrtCreateStreamWithConfig(aclrtStream *stream, uint32_t priority, uint32_t flag) {
    (void)priority;
    (void)flag;
    return CreateStream(stream, "aclrtCreateStreamWithConfig");
}

aclError aclrtDestroyStreamForce(aclrtStream stream) { return aclrtDestroyStream(stream); }

aclError aclrtStreamQuery(aclrtStream stream, aclrtStreamStatus *status) {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (status == nullptr || !KnownStreamLocked(stream, "aclrtStreamQuery")) return ACL_ERROR_INVALID_PARAM;
    *status = ACL_STREAM_STATUS_COMPLETE;
    return ACL_SUCCESS;
}

aclError aclrtStreamGetId(aclrtStream stream, int32_t *streamId) {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (streamId == nullptr || stream == nullptr || !KnownStreamLocked(stream, "aclrtStreamGetId"))
        return ACL_ERROR_INVALID_PARAM;
    *streamId = g_streams[stream];
    return ACL_SUCCESS;
}

aclError aclrtSynchronizeStreamWithTimeout(aclrtStream stream, int32_t timeout) {
    (void)timeout;
    return aclrtSynchronizeStream(stream);
}

aclError aclrtSynchronizeDeviceWithTimeout(int32_t timeout) {
    (void)timeout;
    return aclrtSynchronizeDevice();
}

aclError aclrtMemsetAsync(void *devPtr, size_t maxCount, int32_t value, size_t count, aclrtStream stream) {
    {
        std::lock_guard<std::mutex> lock(g_mutex);
        if (!KnownStreamLocked(stream, "aclrtMemsetAsync")) return ACL_ERROR_INVALID_PARAM;
    }
    return aclrtMemset(devPtr, maxCount, value, count);
}

aclError aclrtGetMemInfo(aclrtMemAttr attr, size_t *free, size_t *total) {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (free == nullptr || total == nullptr) return ACL_ERROR_INVALID_PARAM;
    aclError err = RequireDevice("aclrtGetMemInfo");
    if (err != ACL_SUCCESS) return err;
    bool ddr = attr == ACL_DDR_MEM || attr == ACL_DDR_MEM_HUGE || attr == ACL_DDR_MEM_NORMAL ||
               attr == ACL_DDR_MEM_P2P_HUGE || attr == ACL_DDR_MEM_P2P_NORMAL;
    size_t hbm = static_cast<size_t>(ChipFacts(Config().soc).hbm_bytes);
    *total = ddr ? 0 : hbm;  // an Atlas A2/A3 device has HBM, no device DDR
    *free = ddr ? 0 : (g_device_bytes < hbm ? hbm - g_device_bytes : 0);
    return ACL_SUCCESS;
}

aclError aclrtCreateEventWithFlag(aclrtEvent *event, uint32_t flag) {
    (void)flag;
    std::lock_guard<std::mutex> lock(g_mutex);
    if (event == nullptr) return ACL_ERROR_INVALID_PARAM;
    aclError err = RequireDevice("aclrtCreateEventWithFlag");
    if (err != ACL_SUCCESS) return err;
    Event *e = new Event();
    g_events.insert(e);
    *event = e;
    return ACL_SUCCESS;
}

aclError aclrtCreateEventExWithFlag(aclrtEvent *event, uint32_t flag) { return aclrtCreateEventWithFlag(event, flag); }

aclError aclrtCreateEvent(aclrtEvent *event) { return aclrtCreateEventWithFlag(event, 0); }

}  // extern "C"

namespace {

Event *FindEventLocked(aclrtEvent event, const char *api) {
    Event *e = static_cast<Event *>(event);
    if (g_events.count(e) != 0) return e;
    SetError("EH0002: %s: event %p is not an event created by aclrtCreateEvent", api, event);
    return nullptr;
}

}  // namespace

extern "C" {

aclError aclrtDestroyEvent(aclrtEvent event) {
    std::lock_guard<std::mutex> lock(g_mutex);
    Event *e = FindEventLocked(event, "aclrtDestroyEvent");
    if (e == nullptr) return ACL_ERROR_INVALID_PARAM;
    g_events.erase(e);
    delete e;
    return ACL_SUCCESS;
}

aclError aclrtRecordEvent(aclrtEvent event, aclrtStream stream) {
    std::lock_guard<std::mutex> lock(g_mutex);
    Event *e = FindEventLocked(event, "aclrtRecordEvent");
    if (e == nullptr || !KnownStreamLocked(stream, "aclrtRecordEvent")) return ACL_ERROR_INVALID_PARAM;
    e->recorded = true;  // the stream's work so far is done: operators run synchronously
    e->ns = NowNs();
    return ACL_SUCCESS;
}

aclError aclrtResetEvent(aclrtEvent event, aclrtStream stream) {
    std::lock_guard<std::mutex> lock(g_mutex);
    Event *e = FindEventLocked(event, "aclrtResetEvent");
    if (e == nullptr || !KnownStreamLocked(stream, "aclrtResetEvent")) return ACL_ERROR_INVALID_PARAM;
    e->recorded = false;
    return ACL_SUCCESS;
}

aclError aclrtSynchronizeEvent(aclrtEvent event) {
    std::lock_guard<std::mutex> lock(g_mutex);
    return FindEventLocked(event, "aclrtSynchronizeEvent") == nullptr ? ACL_ERROR_INVALID_PARAM : ACL_SUCCESS;
}

aclError aclrtQueryEventStatus(aclrtEvent event, aclrtEventRecordedStatus *status) {
    std::lock_guard<std::mutex> lock(g_mutex);
    Event *e = FindEventLocked(event, "aclrtQueryEventStatus");
    if (e == nullptr || status == nullptr) return ACL_ERROR_INVALID_PARAM;
    *status = e->recorded ? ACL_EVENT_RECORDED_STATUS_COMPLETE : ACL_EVENT_RECORDED_STATUS_NOT_READY;
    return ACL_SUCCESS;
}

aclError aclrtQueryEventWaitStatus(aclrtEvent event, aclrtEventWaitStatus *status) {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (FindEventLocked(event, "aclrtQueryEventWaitStatus") == nullptr || status == nullptr)
        return ACL_ERROR_INVALID_PARAM;
    *status = ACL_EVENT_WAIT_STATUS_COMPLETE;
    return ACL_SUCCESS;
}

aclError aclrtStreamWaitEvent(aclrtStream stream, aclrtEvent event) {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (FindEventLocked(event, "aclrtStreamWaitEvent") == nullptr || !KnownStreamLocked(stream, "aclrtStreamWaitEvent"))
        return ACL_ERROR_INVALID_PARAM;
    return ACL_SUCCESS;
}

aclError aclrtEventElapsedTime(float *ms, aclrtEvent startEvent, aclrtEvent endEvent) {
    std::lock_guard<std::mutex> lock(g_mutex);
    Event *start = FindEventLocked(startEvent, "aclrtEventElapsedTime");
    Event *end = FindEventLocked(endEvent, "aclrtEventElapsedTime");
    if (ms == nullptr || start == nullptr || end == nullptr) return ACL_ERROR_INVALID_PARAM;
    if (!start->recorded || !end->recorded) {
        SetError("EH0002: aclrtEventElapsedTime needs two recorded events");
        return ACL_ERROR_INVALID_PARAM;
    }
    *ms = static_cast<float>(static_cast<double>(end->ns) - static_cast<double>(start->ns)) / 1e6f;
    return ACL_SUCCESS;
}

aclError aclrtEventGetTimestamp(aclrtEvent event, uint64_t *timestamp) {
    std::lock_guard<std::mutex> lock(g_mutex);
    Event *e = FindEventLocked(event, "aclrtEventGetTimestamp");
    if (e == nullptr || timestamp == nullptr) return ACL_ERROR_INVALID_PARAM;
    *timestamp = e->ns / 1000;  // microseconds
    return ACL_SUCCESS;
}

// A context is a device binding here: the operators run on the CPU, so what a context owns
// on an NPU (streams, memory) stays process-wide.  aclrtCreateContext makes the new context
// current, as the real one binds it to the calling thread.
aclError aclrtCreateContext(aclrtContext *context, int32_t deviceId) {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (context == nullptr) {
        SetError("EH0002: context cannot be nullptr");
        return ACL_ERROR_INVALID_PARAM;
    }
    if (!g_initialised) {
        SetError("EE1001: aclrtCreateContext called before aclInit");
        return ACL_ERROR_UNINITIALIZE;
    }
    int count = Config().devices;
    if (deviceId < 0 || deviceId >= count) {
        SetError("EE1001: device id %d is invalid, the number of NPUs visible is %d", deviceId, count);
        return ACL_ERROR_RT_INVALID_DEVICEID;
    }
    auto *created = new Context{deviceId};
    g_created_contexts.insert(created);
    g_current_context = created;
    g_current_device = deviceId;
    *context = created;
    return ACL_SUCCESS;
}

aclError aclrtDestroyContext(aclrtContext context) {
    std::lock_guard<std::mutex> lock(g_mutex);
    auto *ctx = static_cast<Context *>(context);
    if (g_created_contexts.erase(ctx) == 0) {
        SetError("EH0002: context %p was not created by aclrtCreateContext", context);
        return ACL_ERROR_INVALID_PARAM;
    }
    if (g_current_context == ctx) {
        auto fallback = g_contexts.find(ctx->device);
        g_current_context = fallback == g_contexts.end() ? nullptr : fallback->second;
    }
    delete ctx;
    return ACL_SUCCESS;
}

aclError aclrtGetCurrentContext(aclrtContext *context) {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (context == nullptr) return ACL_ERROR_INVALID_PARAM;
    if (g_current_context == nullptr) {
        SetError("EE1001: there is no current context: call aclrtSetDevice first");
        return 107002;  // ACL_ERROR_RT_CONTEXT_NULL
    }
    *context = g_current_context;
    return ACL_SUCCESS;
}

aclError aclrtSetCurrentContext(aclrtContext context) {
    std::lock_guard<std::mutex> lock(g_mutex);
    auto *ctx = static_cast<Context *>(context);
    bool known = g_created_contexts.count(ctx) != 0;
    for (const auto &entry : g_contexts) known = known || entry.second == ctx;
    if (!known) {
        SetError("EH0002: context %p is not a context of this process", context);
        return ACL_ERROR_INVALID_PARAM;
    }
    g_current_context = ctx;
    g_current_device = ctx->device;
    return ACL_SUCCESS;
}

aclError aclrtGetDeviceInfo(uint32_t deviceId, aclrtDevAttr attr, int64_t *value) {
    if (value == nullptr) return ACL_ERROR_INVALID_PARAM;
    if (static_cast<int>(deviceId) >= Config().devices) {
        SetError("EE1001: device id %u is invalid, the number of NPUs visible is %d", deviceId, Config().devices);
        return ACL_ERROR_RT_INVALID_DEVICEID;
    }
    Chip chip = ChipFacts(Config().soc);
    switch (attr) {
        case ACL_DEV_ATTR_AICPU_CORE_NUM: *value = 6; return ACL_SUCCESS;
        case ACL_DEV_ATTR_AICORE_CORE_NUM:
        case ACL_DEV_ATTR_CUBE_CORE_NUM: *value = chip.cube_cores; return ACL_SUCCESS;
        case ACL_DEV_ATTR_VECTOR_CORE_NUM: *value = chip.vector_cores; return ACL_SUCCESS;
        case ACL_DEV_ATTR_TOTAL_GLOBAL_MEM_SIZE: *value = chip.hbm_bytes; return ACL_SUCCESS;
        case ACL_DEV_ATTR_L2_CACHE_SIZE: *value = chip.l2_bytes; return ACL_SUCCESS;
        default:
            SetError("EE1001: device attribute %d is not known to the cannbuild sandbox", static_cast<int>(attr));
            return ACL_ERROR_RT_PARAM_INVALID;
    }
}

aclError aclGetDeviceCapability(uint32_t deviceId, aclDeviceInfo deviceInfo, int64_t *value) {
    switch (deviceInfo) {
        case ACL_DEVICE_INFO_AI_CORE_NUM: return aclrtGetDeviceInfo(deviceId, ACL_DEV_ATTR_AICORE_CORE_NUM, value);
        case ACL_DEVICE_INFO_VECTOR_CORE_NUM: return aclrtGetDeviceInfo(deviceId, ACL_DEV_ATTR_VECTOR_CORE_NUM, value);
        case ACL_DEVICE_INFO_L2_SIZE: return aclrtGetDeviceInfo(deviceId, ACL_DEV_ATTR_L2_CACHE_SIZE, value);
        default: return ACL_ERROR_INVALID_PARAM;
    }
}

aclError aclrtDeviceCanAccessPeer(int32_t *canAccessPeer, int32_t deviceId, int32_t peerDeviceId) {
    int count = Config().devices;
    if (canAccessPeer == nullptr || deviceId < 0 || deviceId >= count || peerDeviceId < 0 || peerDeviceId >= count)
        return ACL_ERROR_INVALID_PARAM;
    *canAccessPeer = deviceId != peerDeviceId ? 1 : 0;  // the NPUs of one server reach each other over HCCS
    return ACL_SUCCESS;
}

aclError aclrtDeviceGetBareTgid(int32_t *pid) {
    if (pid == nullptr) return ACL_ERROR_INVALID_PARAM;
    *pid = static_cast<int32_t>(getpid());
    return ACL_SUCCESS;
}

aclError aclrtProcessReport(int32_t timeout) {
    // No callback is ever pending: wait out the timeout as the real call does, then report it.
    std::this_thread::sleep_for(std::chrono::milliseconds(timeout < 0 || timeout > 1000 ? 1000 : timeout));
    return 507012;  // ACL_ERROR_RT_REPORT_TIMEOUT
}

aclError aclrtSetSysParamOpt(aclSysParamOpt opt, int64_t value) {
    std::lock_guard<std::mutex> lock(g_mutex);
    g_sys_params[opt] = value;
    return ACL_SUCCESS;
}

aclError aclrtCtxSetSysParamOpt(aclSysParamOpt opt, int64_t value) { return aclrtSetSysParamOpt(opt, value); }

aclError aclrtGetSysParamOpt(aclSysParamOpt opt, int64_t *value) {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (value == nullptr) return ACL_ERROR_INVALID_PARAM;
    auto it = g_sys_params.find(opt);
    *value = it == g_sys_params.end() ? 0 : it->second;  // 0: the default of every option
    return ACL_SUCCESS;
}

}  // extern "C"

struct aclDataBuffer {
    void *data;
    size_t size;
};

struct aclTensorDesc {
    aclDataType dtype;
    std::vector<int64_t> dims;
    aclFormat format;
};

struct aclopAttr {};

extern "C" {

aclDataBuffer *aclCreateDataBuffer(void *data, size_t size) { return new aclDataBuffer{data, size}; }

aclError aclDestroyDataBuffer(const aclDataBuffer *dataBuffer) {
    if (dataBuffer == nullptr) return ACL_ERROR_INVALID_PARAM;
    delete dataBuffer;
    return ACL_SUCCESS;
}

aclTensorDesc *aclCreateTensorDesc(aclDataType dataType, int numDims, const int64_t *dims, aclFormat format) {
    if (numDims < 0 || (numDims > 0 && dims == nullptr)) return nullptr;
    return new aclTensorDesc{dataType, std::vector<int64_t>(dims, dims + numDims), format};
}

void aclDestroyTensorDesc(const aclTensorDesc *desc) { delete desc; }

aclDataType aclGetTensorDescType(const aclTensorDesc *desc) { return desc ? desc->dtype : ACL_DT_UNDEFINED; }

aclFormat aclGetTensorDescFormat(const aclTensorDesc *desc) { return desc ? desc->format : ACL_FORMAT_UNDEFINED; }

size_t aclGetTensorDescNumDims(const aclTensorDesc *desc) { return desc ? desc->dims.size() : 0; }

aclError aclGetTensorDescDimV2(const aclTensorDesc *desc, size_t index, int64_t *dimSize) {
    if (desc == nullptr || dimSize == nullptr || index >= desc->dims.size()) return ACL_ERROR_INVALID_PARAM;
    *dimSize = desc->dims[index];
    return ACL_SUCCESS;
}

aclopAttr *aclopCreateAttr() { return new aclopAttr(); }

void aclopDestroyAttr(const aclopAttr *attr) { delete attr; }

void aclAppLog(aclLogLevel logLevel, const char *func, const char *file, uint32_t line, const char *fmt, ...) {
    // Printed only when the user asks for logs on stdout, as CANN's slog does.
    const char *to_stdout = std::getenv("ASCEND_SLOG_PRINT_TO_STDOUT");
    if (to_stdout == nullptr || std::strcmp(to_stdout, "1") != 0 || fmt == nullptr) return;
    std::printf("[%d] %s %s:%u ", static_cast<int>(logLevel), func ? func : "", file ? file : "", line);
    va_list args;
    va_start(args, fmt);
    std::vprintf(fmt, args);
    va_end(args);
    std::printf("\n");
}

uint64_t MsprofSysCycleTime(void) { return NowNs(); }

uint64_t MsprofGetHashId(const char *hashInfo, size_t length) {
    uint64_t hash = 1469598103934665603ull;  // FNV-1a: a stable id per string
    for (size_t i = 0; hashInfo != nullptr && i < length; ++i) {
        hash ^= static_cast<unsigned char>(hashInfo[i]);
        hash *= 1099511628211ull;
    }
    return hash;
}

}  // extern "C"
