// cannbuild validation: a minimal FlashAttention inference through the public
// AscendCL + aclnn API only, so the same source builds against a real CANN
// install and against the cannbuild sandbox.
//
//   fa_check <manifest>
//
// Each manifest line is one case of key=value words (written by cannbuild):
//   name dtype(fp32|fp16|bf16) layout(BNSD|BSH|SBH|BSND|TND) B N1 N2 S1 S2 D scale
//   sparse pre next q k v [mask] out smax ssum [seqq seqkv]
// Inputs are raw little-endian arrays in the case's dtype (mask: uint8,
// [S1,S2], 1 = masked); outputs are written the same way (softmax stats as
// float32 [B,N1,S1,8]).  TND is the VarLen form: S1 and S2 are the query's and the
// key's T, seqq and seqkv the cumulative per-batch ends ("100,356") that
// aclnnFlashAttentionVarLenScoreV4 takes, and the softmax stats are [T1,N1,8]
// (softmaxOutLayout "same_as_input"); the other layouts go through
// aclnnFlashAttentionScoreV2.  cannbuild judges the numbers; this program only runs
// them.  One line per case goes to stdout: "CASE <name> OK <milliseconds>" or
// "CASE <name> ERROR <api> <code> <aclGetRecentErrMsg()>".
//
// Benchmarks add "warmup=W reps=R": after the checked call the operator runs W more
// times, then R times each between two events recorded on the stream (the time the
// device reports, aclrtEventElapsedTime), printed first as "TIMES <name> <ms>...".
// "memory=1" prints "MEM <name> <bytes>": the device memory the checked call held beyond
// its inputs, as aclrtGetMemInfo reports it (the drop in free HBM).

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_flash_attention_score.h"

namespace {

struct Case {
    std::map<std::string, std::string> kv;
    std::string Get(const std::string &key) const {
        auto it = kv.find(key);
        return it == kv.end() ? "" : it->second;
    }
    int64_t Int(const std::string &key) const { return std::strtoll(Get(key).c_str(), nullptr, 10); }
    std::vector<int64_t> Ints(const std::string &key) const {
        std::vector<int64_t> values;
        std::istringstream words(Get(key));
        std::string word;
        while (std::getline(words, word, ',')) values.push_back(std::strtoll(word.c_str(), nullptr, 10));
        return values;
    }
};

struct ApiError {
    std::string api;
    int64_t code;
};

void Check(int64_t code, const char *api) {
    if (code != 0) throw ApiError{api, code};
}

std::vector<char> ReadFile(const std::string &path, size_t bytes) {
    std::vector<char> data(bytes);
    std::ifstream in(path, std::ios::binary);
    if (!in.read(data.data(), static_cast<std::streamsize>(bytes))) {
        throw std::runtime_error("cannot read " + std::to_string(bytes) + " bytes from " + path);
    }
    return data;
}

void WriteFile(const std::string &path, const std::vector<char> &data) {
    std::ofstream out(path, std::ios::binary);
    out.write(data.data(), static_cast<std::streamsize>(data.size()));
    if (!out) throw std::runtime_error("cannot write " + path);
}

std::vector<int64_t> Strides(const std::vector<int64_t> &shape) {
    std::vector<int64_t> s(shape.size(), 1);
    for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; --i) s[i] = shape[i + 1] * s[i + 1];
    return s;
}

int64_t Count(const std::vector<int64_t> &shape) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
}

// A device buffer plus the aclTensor that views it.
struct DeviceTensor {
    void *dev = nullptr;
    aclTensor *tensor = nullptr;
    size_t bytes = 0;
    ~DeviceTensor() {
        if (tensor != nullptr) aclDestroyTensor(tensor);
        if (dev != nullptr) aclrtFree(dev);
    }
};

void MakeTensor(DeviceTensor &t, const std::vector<int64_t> &shape, aclDataType dtype, size_t elem,
                const std::vector<char> *host) {
    t.bytes = static_cast<size_t>(Count(shape)) * elem;
    Check(aclrtMalloc(&t.dev, t.bytes, ACL_MEM_MALLOC_HUGE_FIRST), "aclrtMalloc");
    if (host != nullptr) {
        Check(aclrtMemcpy(t.dev, t.bytes, host->data(), t.bytes, ACL_MEMCPY_HOST_TO_DEVICE), "aclrtMemcpy");
    }
    std::vector<int64_t> strides = Strides(shape);
    t.tensor = aclCreateTensor(shape.data(), shape.size(), dtype, strides.data(), 0, aclFormat::ACL_FORMAT_ND,
                               shape.data(), shape.size(), t.dev);
    if (t.tensor == nullptr) throw ApiError{"aclCreateTensor", -1};
}

std::vector<char> Download(const DeviceTensor &t) {
    std::vector<char> host(t.bytes);
    Check(aclrtMemcpy(host.data(), host.size(), t.dev, t.bytes, ACL_MEMCPY_DEVICE_TO_HOST), "aclrtMemcpy");
    return host;
}

std::vector<int64_t> Shape(const std::string &layout, int64_t B, int64_t N, int64_t S, int64_t D) {
    if (layout == "BNSD") return {B, N, S, D};
    if (layout == "BSND") return {B, S, N, D};
    if (layout == "SBH") return {S, B, N * D};
    if (layout == "TND") return {S, N, D};  // S: T, every batch's rows one after another
    return {B, S, N * D};  // BSH
}

double RunCase(const Case &c, aclrtStream stream) {
    const std::string dtype_name = c.Get("dtype");
    aclDataType dtype = dtype_name == "fp16" ? ACL_FLOAT16 : dtype_name == "bf16" ? ACL_BF16 : ACL_FLOAT;
    size_t elem = dtype == ACL_FLOAT ? 4 : 2;
    std::string layout = c.Get("layout");
    int64_t B = c.Int("B"), N1 = c.Int("N1"), N2 = c.Int("N2"), S1 = c.Int("S1"), S2 = c.Int("S2"), D = c.Int("D");
    auto qshape = Shape(layout, B, N1, S1, D), kshape = Shape(layout, B, N2, S2, D);
    const bool varlen = layout == "TND";
    std::vector<int64_t> stat_shape = varlen ? std::vector<int64_t>{S1, N1, 8} : std::vector<int64_t>{B, N1, S1, 8};

    std::vector<char> qh = ReadFile(c.Get("q"), Count(qshape) * elem);
    std::vector<char> kh = ReadFile(c.Get("k"), Count(kshape) * elem);
    std::vector<char> vh = ReadFile(c.Get("v"), Count(kshape) * elem);

    DeviceTensor q, k, v, mask, out, smax, ssum;
    MakeTensor(q, qshape, dtype, elem, &qh);
    MakeTensor(k, kshape, dtype, elem, &kh);
    MakeTensor(v, kshape, dtype, elem, &vh);
    if (!c.Get("mask").empty()) {
        std::vector<int64_t> mshape = {S1, S2};
        std::vector<char> mh = ReadFile(c.Get("mask"), Count(mshape));
        MakeTensor(mask, mshape, ACL_UINT8, 1, &mh);
    }
    // memory=1 (benchmarks): the call's own device memory (outputs, statistics, workspace) is
    // the drop in free memory from here, inputs resident, to after the call, all still held.
    size_t free_inputs = 0, free_peak = 0, total = 0;
    const bool memory = c.Int("memory") > 0;
    if (memory) Check(aclrtGetMemInfo(ACL_HBM_MEM, &free_inputs, &total), "aclrtGetMemInfo");
    MakeTensor(out, qshape, dtype, elem, nullptr);
    MakeTensor(smax, stat_shape, ACL_FLOAT, 4, nullptr);
    MakeTensor(ssum, stat_shape, ACL_FLOAT, 4, nullptr);

    std::vector<int64_t> zero = {0}, seqq = c.Ints("seqq"), seqkv = c.Ints("seqkv");
    aclIntArray *prefix = aclCreateIntArray(zero.data(), 1);
    aclIntArray *qStart = aclCreateIntArray(zero.data(), 1);
    aclIntArray *kvStart = aclCreateIntArray(zero.data(), 1);
    aclIntArray *seqQ = varlen ? aclCreateIntArray(seqq.data(), seqq.size()) : nullptr;
    aclIntArray *seqKv = varlen ? aclCreateIntArray(seqkv.data(), seqkv.size()) : nullptr;
    char layout_buf[8] = {0};
    layout.copy(layout_buf, sizeof(layout_buf) - 1);
    char softmax_layout[] = "same_as_input";
    const char *prepare_api = varlen ? "aclnnFlashAttentionVarLenScoreV4GetWorkspaceSize"
                                     : "aclnnFlashAttentionScoreV2GetWorkspaceSize";
    const char *run_api = varlen ? "aclnnFlashAttentionVarLenScoreV4" : "aclnnFlashAttentionScoreV2";

    uint64_t workspace_size = 0;
    aclOpExecutor *executor = nullptr;
    const auto start = std::chrono::steady_clock::now();
    void *workspace = nullptr;
    aclrtEvent events[2] = {nullptr, nullptr};
    struct Cleanup {
        std::vector<aclIntArray *> arrays;
        void **ws;
        ~Cleanup() {
            for (aclIntArray *a : arrays)
                if (a != nullptr) aclDestroyIntArray(a);
            if (*ws != nullptr) aclrtFree(*ws);
        }
    } cleanup{{prefix, qStart, kvStart, seqQ, seqKv}, &workspace};
    struct EventCleanup {
        aclrtEvent *e;
        ~EventCleanup() {
            for (int i = 0; i < 2; ++i)
                if (e[i] != nullptr) aclrtDestroyEvent(e[i]);
        }
    } event_cleanup{events};

    const double scale = std::strtod(c.Get("scale").c_str(), nullptr);
    auto prepare = [&]() {
        if (varlen) {
            Check(aclnnFlashAttentionVarLenScoreV4GetWorkspaceSize(
                      q.tensor, k.tensor, v.tensor, nullptr, nullptr, nullptr, mask.tensor, prefix, seqQ, seqKv,
                      scale, 1.0, c.Int("pre"), c.Int("next"), N1, layout_buf, 0, c.Int("sparse"), softmax_layout,
                      smax.tensor, ssum.tensor, nullptr, out.tensor, &workspace_size, &executor),
                  prepare_api);
            return;
        }
        Check(aclnnFlashAttentionScoreV2GetWorkspaceSize(
                  q.tensor, k.tensor, v.tensor, nullptr, nullptr, nullptr, mask.tensor, prefix, qStart, kvStart,
                  scale, 1.0, c.Int("pre"), c.Int("next"), N1, layout_buf, 0, c.Int("sparse"), 1, smax.tensor,
                  ssum.tensor, nullptr, out.tensor, &workspace_size, &executor),
              prepare_api);
    };
    auto launch = [&]() {
        Check(varlen ? aclnnFlashAttentionVarLenScoreV4(workspace, workspace_size, executor, stream)
                     : aclnnFlashAttentionScoreV2(workspace, workspace_size, executor, stream),
              run_api);
    };
    prepare();
    if (workspace_size > 0) Check(aclrtMalloc(&workspace, workspace_size, ACL_MEM_MALLOC_HUGE_FIRST), "aclrtMalloc");
    const uint64_t workspace_allocated = workspace_size;
    launch();
    Check(aclrtSynchronizeStream(stream), "aclrtSynchronizeStream");
    if (memory) {
        Check(aclrtGetMemInfo(ACL_HBM_MEM, &free_peak, &total), "aclrtGetMemInfo");
        std::printf("MEM %s %llu\n", c.Get("name").c_str(),
                    static_cast<unsigned long long>(free_inputs > free_peak ? free_inputs - free_peak : 0));
    }
    const double elapsed_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();

    WriteFile(c.Get("out"), Download(out));
    WriteFile(c.Get("smax"), Download(smax));
    WriteFile(c.Get("ssum"), Download(ssum));

    const int64_t warmup = c.Int("warmup"), reps = c.Int("reps");
    if (reps > 0) {
        Check(aclrtCreateEvent(&events[0]), "aclrtCreateEvent");
        Check(aclrtCreateEvent(&events[1]), "aclrtCreateEvent");
        std::ostringstream times;
        for (int64_t i = 0; i < warmup + reps; ++i) {
            prepare();  // host-side, outside the events: an executor runs once
            if (workspace_size > workspace_allocated) throw ApiError{prepare_api, -1};
            Check(aclrtRecordEvent(events[0], stream), "aclrtRecordEvent");
            launch();
            Check(aclrtRecordEvent(events[1], stream), "aclrtRecordEvent");
            Check(aclrtSynchronizeEvent(events[1]), "aclrtSynchronizeEvent");
            float ms = 0.0f;
            Check(aclrtEventElapsedTime(&ms, events[0], events[1]), "aclrtEventElapsedTime");
            if (i >= warmup) times << ' ' << ms;
        }
        std::printf("TIMES %s%s\n", c.Get("name").c_str(), times.str().c_str());
    }
    return elapsed_ms;
}

std::vector<Case> ReadManifest(const std::string &path) {
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

const char *RecentError() {
    const char *msg = aclGetRecentErrMsg();
    return msg != nullptr && msg[0] != '\0' ? msg : "(no message)";
}

}  // namespace

int main(int argc, char **argv) {
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
            const double ms = RunCase(c, stream);
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
