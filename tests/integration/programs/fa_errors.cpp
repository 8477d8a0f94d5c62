// Error paths of aclnnFlashAttentionScoreV2 and of the VarLen APIs, and the context
// calls of the VarLen example, through the public API only.
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

// seq_q / seq_kv: cumulative ends; v4: aclnnFlashAttentionVarLenScoreV4 with `softmax_layout`,
// else aclnnFlashAttentionVarLenScore.
static void ProbeVarLen(const char *name, aclTensor *q, aclTensor *k, aclTensor *v, aclTensor *mx, aclTensor *sm,
                        aclTensor *out, const std::vector<int64_t> &seq_q, const std::vector<int64_t> &seq_kv,
                        const char *layout_text, bool v4, const char *softmax_layout = "same_as_input") {
    char layout[8] = {0}, stat_layout[16] = {0};
    for (int i = 0; layout_text[i] && i < 7; ++i) layout[i] = layout_text[i];
    for (int i = 0; softmax_layout[i] && i < 15; ++i) stat_layout[i] = softmax_layout[i];
    aclIntArray *sq = aclCreateIntArray(seq_q.data(), seq_q.size());
    aclIntArray *skv = aclCreateIntArray(seq_kv.data(), seq_kv.size());
    uint64_t ws = 0;
    aclOpExecutor *exec = nullptr;
    aclnnStatus st =
        v4 ? aclnnFlashAttentionVarLenScoreV4GetWorkspaceSize(q, k, v, nullptr, nullptr, nullptr, nullptr, nullptr, sq,
                                                              skv, 0.125, 1.0, 2147483647, 2147483647, 4, layout, 0, 0,
                                                              stat_layout, mx, sm, nullptr, out, &ws, &exec)
           : aclnnFlashAttentionVarLenScoreGetWorkspaceSize(q, k, v, nullptr, nullptr, nullptr, nullptr, nullptr, sq, skv,
                                                            0.125, 1.0, 2147483647, 2147483647, 4, layout, 0, 0, mx, sm,
                                                            nullptr, out, &ws, &exec);
    std::printf("%s %d %s\n", name, st, st == 0 ? "" : aclGetRecentErrMsg());
    if (st == 0) {
        void *w = nullptr;
        if (ws) aclrtMalloc(&w, ws, ACL_MEM_MALLOC_HUGE_FIRST);
        st = v4 ? aclnnFlashAttentionVarLenScoreV4(w, ws, exec, nullptr) : aclnnFlashAttentionVarLenScore(w, ws, exec, nullptr);
        std::printf("%s-run %d\n", name, st);
    }
    aclDestroyIntArray(sq);
    aclDestroyIntArray(skv);
}

int main() {
    aclInit(nullptr);
    aclrtSetDevice(0);
    // the VarLen example's own context: created current, destroyed once
    aclrtContext made = nullptr, current = nullptr;
    int created = aclrtCreateContext(&made, 0);
    int set = aclrtSetCurrentContext(made);
    int got = aclrtGetCurrentContext(&current);
    std::printf("context %d %d %d %d\n", created, set, got, current == made ? 1 : 0);
    int destroyed = aclrtDestroyContext(made);
    int again = aclrtDestroyContext(made);
    std::printf("context-destroy %d %d %s\n", destroyed, again, aclGetRecentErrMsg());
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
    // TND: two sequences of 5 and 11 query rows (T1 = 16) over 7 and 5 keys (T2 = 12), N1 = 4, N2 = 2
    aclTensor *tq = Make({16, 4, 64}, ACL_FLOAT16, 2, &d, false);
    aclTensor *tk = Make({12, 2, 64}, ACL_FLOAT16, 2, &d, false);
    aclTensor *tv = Make({12, 2, 64}, ACL_FLOAT16, 2, &d, false);
    aclTensor *tout = Make({16, 4, 64}, ACL_FLOAT16, 2, &d, false);
    aclTensor *tmx = Make({16, 4, 8}, ACL_FLOAT, 4, &d, false);
    aclTensor *tsm = Make({16, 4, 8}, ACL_FLOAT, 4, &d, false);
    aclTensor *nmx = Make({4, 16, 8}, ACL_FLOAT, 4, &d, false);
    aclTensor *nsm = Make({4, 16, 8}, ACL_FLOAT, 4, &d, false);
    ProbeVarLen("varlen-v4", tq, tk, tv, tmx, tsm, tout, {5, 16}, {7, 12}, "TND", true);
    ProbeVarLen("varlen-v1", tq, tk, tv, nmx, nsm, tout, {5, 16}, {7, 12}, "TND", false);
    ProbeVarLen("varlen-v1-tn8", tq, tk, tv, tmx, tsm, tout, {5, 16}, {7, 12}, "TND", false);  // torch_npu's
    ProbeVarLen("varlen-trailing-zero", tq, tk, tv, tmx, tsm, tout, {16, 0}, {12, 0}, "TND", true);
    ProbeVarLen("varlen-bsh", q, k, v, mx, sm, out, {16}, {16}, "BSH", true);
    ProbeVarLen("varlen-lowercase", tq, tk, tv, tmx, tsm, tout, {5, 16}, {7, 12}, "tnd", true);
    ProbeVarLen("varlen-count", tq, tk, tv, tmx, tsm, tout, {5, 16}, {12}, "TND", true);
    ProbeVarLen("varlen-not-cumulative", tq, tk, tv, tmx, tsm, tout, {11, 5}, {7, 12}, "TND", true);
    ProbeVarLen("varlen-beyond-t", tq, tk, tv, tmx, tsm, tout, {5, 20}, {7, 12}, "TND", true);
    ProbeVarLen("varlen-stat-shape", tq, tk, tv, nmx, nsm, tout, {5, 16}, {7, 12}, "TND", true);
    ProbeVarLen("varlen-softmax-layout", tq, tk, tv, tmx, tsm, tout, {5, 16}, {7, 12}, "TND", true, "TND");
    aclFinalize();
    return 0;
}
