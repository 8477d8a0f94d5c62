// cannbuild validation: what the per-operator C API checks of the sibling repositories
// (segsum_check.cpp, swi_glu_check.cpp, upsample_bilinear2d_check.cpp) share with
// ../flash_attention/fa_check.cpp: a manifest of cases (one line of key=value words each,
// written by cannbuild), raw little-endian input and output files, device tensors made
// with the public AscendCL + aclnn API only, and one line per case on stdout:
// "CASE <name> OK <milliseconds>" or "CASE <name> ERROR <api> <code> <aclGetRecentErrMsg()>".
// cannbuild judges the numbers; these programs only run them.
#ifndef CANNBUILD_OP_CHECK_H_
#define CANNBUILD_OP_CHECK_H_

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "acl/acl.h"

namespace op_check {

struct Case {
    std::map<std::string, std::string> kv;
    std::string Get(const std::string &key) const {
        auto it = kv.find(key);
        return it == kv.end() ? "" : it->second;
    }
    int64_t Int(const std::string &key) const { return std::strtoll(Get(key).c_str(), nullptr, 10); }
    double Real(const std::string &key) const { return std::strtod(Get(key).c_str(), nullptr); }
    // "2,3,4" -> {2, 3, 4}
    std::vector<int64_t> Ints(const std::string &key) const {
        std::vector<int64_t> out;
        std::stringstream words(Get(key));
        std::string word;
        while (std::getline(words, word, ',')) out.push_back(std::strtoll(word.c_str(), nullptr, 10));
        return out;
    }
    aclDataType Dtype() const {
        const std::string name = Get("dtype");
        return name == "fp16" ? ACL_FLOAT16 : name == "bf16" ? ACL_BF16 : ACL_FLOAT;
    }
    size_t Elem() const { return Dtype() == ACL_FLOAT ? 4 : 2; }
};

struct ApiError {
    std::string api;
    int64_t code;
};

inline void Check(int64_t code, const char *api) {
    if (code != 0) throw ApiError{api, code};
}

inline int64_t Count(const std::vector<int64_t> &shape) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
}

inline std::vector<char> ReadFile(const std::string &path, size_t bytes) {
    std::vector<char> data(bytes);
    std::ifstream in(path, std::ios::binary);
    if (!in.read(data.data(), static_cast<std::streamsize>(bytes)))
        throw std::runtime_error("cannot read " + std::to_string(bytes) + " bytes from " + path);
    return data;
}

inline void WriteFile(const std::string &path, const std::vector<char> &data) {
    std::ofstream out(path, std::ios::binary);
    out.write(data.data(), static_cast<std::streamsize>(data.size()));
    if (!out) throw std::runtime_error("cannot write " + path);
}

// A device buffer plus the contiguous aclTensor that views it.
struct DeviceTensor {
    void *dev = nullptr;
    aclTensor *tensor = nullptr;
    size_t bytes = 0;
    DeviceTensor() = default;
    DeviceTensor(const DeviceTensor &) = delete;
    DeviceTensor &operator=(const DeviceTensor &) = delete;
    ~DeviceTensor() {
        if (tensor != nullptr) aclDestroyTensor(tensor);
        if (dev != nullptr) aclrtFree(dev);
    }
    void Make(const std::vector<int64_t> &shape, aclDataType dtype, size_t elem, aclFormat format,
              const std::vector<char> *host) {
        bytes = static_cast<size_t>(Count(shape)) * elem;
        // aclrtMalloc refuses 0 bytes; an empty tensor still needs an address
        Check(aclrtMalloc(&dev, bytes > 0 ? bytes : elem, ACL_MEM_MALLOC_HUGE_FIRST), "aclrtMalloc");
        if (host != nullptr && bytes > 0)
            Check(aclrtMemcpy(dev, bytes, host->data(), bytes, ACL_MEMCPY_HOST_TO_DEVICE), "aclrtMemcpy");
        std::vector<int64_t> strides(shape.size(), 1);
        for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; --i) strides[i] = shape[i + 1] * strides[i + 1];
        tensor = aclCreateTensor(shape.data(), shape.size(), dtype, strides.data(), 0, format, shape.data(),
                                 shape.size(), dev);
        if (tensor == nullptr) throw ApiError{"aclCreateTensor", -1};
    }
    std::vector<char> Download() const {
        std::vector<char> host(bytes);
        if (bytes > 0) Check(aclrtMemcpy(host.data(), host.size(), dev, bytes, ACL_MEMCPY_DEVICE_TO_HOST), "aclrtMemcpy");
        return host;
    }
};

// The two phases of an aclnn call, with its workspace: `prepare` is the GetWorkspaceSize call
// (filling size and executor), `launch` the run.
template <typename Prepare, typename Launch>
void TwoPhase(aclrtStream stream, const char *api, Prepare prepare, Launch launch) {
    uint64_t size = 0;
    aclOpExecutor *executor = nullptr;
    Check(prepare(&size, &executor), (std::string(api) + "GetWorkspaceSize").c_str());
    void *workspace = nullptr;
    if (size > 0) Check(aclrtMalloc(&workspace, size, ACL_MEM_MALLOC_HUGE_FIRST), "aclrtMalloc");
    struct Free {
        void *p;
        ~Free() {
            if (p != nullptr) aclrtFree(p);
        }
    } release{workspace};
    Check(launch(workspace, size, executor, stream), api);
    Check(aclrtSynchronizeStream(stream), "aclrtSynchronizeStream");
}

inline std::vector<Case> ReadManifest(const std::string &path) {
    std::ifstream in(path);
    if (!in) throw std::runtime_error("cannot open manifest " + path);
    std::vector<Case> cases;
    std::string line;
    while (std::getline(in, line)) {
        if (line.empty() || line[0] == '#') continue;
        std::istringstream words(line);
        Case c;
        std::string word;
        while (words >> word) {
            size_t eq = word.find('=');
            if (eq != std::string::npos) c.kv[word.substr(0, eq)] = word.substr(eq + 1);
        }
        cases.push_back(c);
    }
    return cases;
}

inline const char *RecentError() {
    const char *msg = aclGetRecentErrMsg();
    return msg != nullptr && msg[0] != '\0' ? msg : "(no message)";
}

// main(): every case of the manifest through `run`, one CASE line each.
template <typename Run>
int Main(int argc, char **argv, Run run) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: %s <manifest>\n", argv[0]);
        return 2;
    }
    std::vector<Case> cases;
    try {
        cases = ReadManifest(argv[1]);
    } catch (const std::exception &e) {
        std::fprintf(stderr, "%s\n", e.what());
        return 2;
    }
    int32_t device = 0;
    aclrtStream stream = nullptr;
    try {
        Check(aclInit(nullptr), "aclInit");
        Check(aclrtSetDevice(device), "aclrtSetDevice");
        Check(aclrtCreateStream(&stream), "aclrtCreateStream");
    } catch (const ApiError &e) {
        std::printf("SETUP ERROR %s %lld %s\n", e.api.c_str(), static_cast<long long>(e.code), RecentError());
        return 3;
    }
    int failures = 0;
    for (const Case &c : cases) {
        try {
            const auto start = std::chrono::steady_clock::now();
            run(c, stream);
            const double ms =
                std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
            std::printf("CASE %s OK %.3f\n", c.Get("name").c_str(), ms);
        } catch (const ApiError &e) {
            ++failures;
            std::printf("CASE %s ERROR %s %lld %s\n", c.Get("name").c_str(), e.api.c_str(),
                        static_cast<long long>(e.code), RecentError());
        } catch (const std::exception &e) {
            ++failures;
            std::printf("CASE %s ERROR io -1 %s\n", c.Get("name").c_str(), e.what());
        }
        std::fflush(stdout);
    }
    aclrtDestroyStream(stream);
    aclrtResetDevice(device);
    aclFinalize();
    return failures == 0 ? 0 : 1;
}

}  // namespace op_check

#endif  // CANNBUILD_OP_CHECK_H_
