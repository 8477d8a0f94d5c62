// Error paths of aclnnFlashAttentionScoreV2, through the public API only.
// One line per probe: "<probe> <status> <aclGetRecentErrMsg()>".
#include <cstdio>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_flash_attention_score.h"

static aclTensor *Make(const std::vector<int64_t> &shape, aclDataType dt, size_t elem, void **dev, bool host_memory,
                       aclFormat format = ACL_FORMAT_ND) {
    size_t n = 1;
    for (int64_t d : shape) n *= static_cast<size_t>(d);
    static std::vector<std::vector<char>> host_buffers;
    if (host_memory) {
        host_buffers.emplace_back(n * elem);
        *dev = host_buffers.back().data();
    } else {
        aclrtMalloc(dev, n * elem, ACL_MEM_MALLOC_HUGE_FIRST);
    }
    std::vector<int64_t> strides(shape.size(), 1);
    for (int i = static_cast<int>(shape.size()) - 2; i >= 0; --i) strides[i] = strides[i + 1] * shape[i + 1];
    return aclCreateTensor(shape.data(), shape.size(), dt, strides.data(), 0, format, shape.data(), shape.size(), *dev);
}

static void Probe(const char *name, aclTensor *q, aclTensor *k, aclTensor *v, aclTensor *mx, aclTensor *sm, aclTensor *out,
                  int64_t heads, const char *layout_text) {
    char layout[8] = {0};
    for (int i = 0; layout_text[i] && i < 7; ++i) layout[i] = layout_text[i];
    uint64_t ws = 0;
    aclOpExecutor *exec = nullptr;
    aclnnStatus st = aclnnFlashAttentionScoreV2GetWorkspaceSize(q, k, v, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
                                                                nullptr, 0.125, 1.0, 2147483647, 2147483647, heads, layout, 0,
                                                                0, 1, mx, sm, nullptr, out, &ws, &exec);
    std::printf("%s %d %s\n", name, st, st == 0 ? "" : aclGetRecentErrMsg());
    if (st == 0) {
        void *w = nullptr;
        if (ws) aclrtMalloc(&w, ws, ACL_MEM_MALLOC_HUGE_FIRST);
        st = aclnnFlashAttentionScoreV2(w, ws, exec, nullptr);
        std::printf("%s-run %d\n", name, st);
    }
}

int main() {
    aclInit(nullptr);
    aclrtSetDevice(0);
    void *d;
    // BNSD, B=1, N1=4, N2=2, S=16, D=64, fp16
    aclTensor *q = Make({1, 4, 16, 64}, ACL_FLOAT16, 2, &d, false);
    aclTensor *k = Make({1, 2, 16, 64}, ACL_FLOAT16, 2, &d, false);
    aclTensor *v = Make({1, 2, 16, 64}, ACL_FLOAT16, 2, &d, false);
    aclTensor *k3 = Make({1, 3, 16, 64}, ACL_FLOAT16, 2, &d, false);
    aclTensor *qhost = Make({1, 4, 16, 64}, ACL_FLOAT16, 2, &d, true);
    aclTensor *mx = Make({1, 4, 16, 8}, ACL_FLOAT, 4, &d, false);
    aclTensor *sm = Make({1, 4, 16, 8}, ACL_FLOAT, 4, &d, false);
    aclTensor *out = Make({1, 4, 16, 64}, ACL_FLOAT16, 2, &d, false);
    aclTensor *outf = Make({1, 4, 16, 64}, ACL_FLOAT, 4, &d, false);
    Probe("ok", q, k, v, mx, sm, out, 4, "BNSD");
    Probe("null-query", nullptr, k, v, mx, sm, out, 4, "BNSD");
    Probe("null-out", q, k, v, mx, sm, nullptr, 4, "BNSD");
    Probe("bad-layout", q, k, v, mx, sm, out, 4, "XYZW");
    Probe("tnd-layout", q, k, v, mx, sm, out, 4, "TND");
    Probe("gqa-not-multiple", q, k3, k3, mx, sm, out, 4, "BNSD");
    Probe("headnum-mismatch", q, k, v, mx, sm, out, 3, "BNSD");
    Probe("out-dtype", q, k, v, mx, sm, outf, 4, "BNSD");
    Probe("host-memory", qhost, k, v, mx, sm, out, 4, "BNSD");
    // torch_npu tags tensors by rank: 4-D NCHW, 3-D NCL; the real op accepts those and rejects FRACTAL_NZ
    aclTensor *q4 = Make({1, 4, 16, 64}, ACL_FLOAT16, 2, &d, false, ACL_FORMAT_NCHW);
    aclTensor *k4 = Make({1, 2, 16, 64}, ACL_FLOAT16, 2, &d, false, ACL_FORMAT_NCHW);
    aclTensor *v4 = Make({1, 2, 16, 64}, ACL_FLOAT16, 2, &d, false, ACL_FORMAT_NCHW);
    aclTensor *mx4 = Make({1, 4, 16, 8}, ACL_FLOAT, 4, &d, false, ACL_FORMAT_NCHW);
    aclTensor *sm4 = Make({1, 4, 16, 8}, ACL_FLOAT, 4, &d, false, ACL_FORMAT_NCHW);
    aclTensor *out4 = Make({1, 4, 16, 64}, ACL_FLOAT16, 2, &d, false, ACL_FORMAT_NCHW);
    Probe("nchw-format", q4, k4, v4, mx4, sm4, out4, 4, "BNSD");
    aclTensor *q3 = Make({1, 16, 256}, ACL_FLOAT16, 2, &d, false, ACL_FORMAT_NCL);
    aclTensor *k3d = Make({1, 16, 128}, ACL_FLOAT16, 2, &d, false, ACL_FORMAT_NCL);
    aclTensor *v3d = Make({1, 16, 128}, ACL_FLOAT16, 2, &d, false, ACL_FORMAT_NCL);
    aclTensor *out3 = Make({1, 16, 256}, ACL_FLOAT16, 2, &d, false, ACL_FORMAT_NCL);
    Probe("ncl-format", q3, k3d, v3d, mx4, sm4, out3, 4, "BSH");
    aclTensor *qnz = Make({1, 4, 16, 64}, ACL_FLOAT16, 2, &d, false, ACL_FORMAT_FRACTAL_NZ);
    Probe("nz-format", qnz, k, v, mx, sm, out, 4, "BNSD");
    aclFinalize();
    return 0;
}
