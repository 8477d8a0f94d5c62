// cannbuild sandbox stand-in: aclnnFlashAttentionVarLenScore and VarLenScoreV4, the TND
// (variable sequence length) APIs, checked like the real op_api and run by the CPU kernel
// with each batch attending only within its own rows.
//
// Read at ops-transformer v9.0.0 (facts only): attention/flash_attention_score/op_api/
// aclnn_flash_attention_score.cpp (VarLen: inputLayout must be exactly "TND"),
// docs/aclnnFlashAttentionVarLenScore{,V4}.md (actualSeqQLen / actualSeqKvLen are
// cumulative per-batch ends, [2,2,0,2,2] -> [2,4,4,6,8]; trailing zeros leave batches
// out; softmax outputs [N,T,8], or [T,N,8] when V4's softmaxOutLayout is
// "same_as_input"), op_host/arch32/flash_attention_score_tiling_general.cpp (a TND
// attenMask is [maxSq, maxSkv], or [T1, T2]).
//
// Fault hook (CANNBUILD_SANDBOX_FAULT=fa-varlen-ignore-lengths): SANDBOX_FAULT_VARLEN_IGNORE_LENGTHS
// makes every batch's queries attend over all T2 keys, as a kernel that never reads
// actualSeqKvLen would.

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "aclnn_flash_attention_score.h"
#include "emu/emu_runtime.h"
#include "flash_attention_score_checks.h"

namespace {

using fa_api::Fail;
using fa_api::Request;
using fa_api::ShapeText;
using fa_api::Tensor;

constexpr uint64_t kMaxBatches = 20000;  // MAX_VAR_LEN_SEQ_LEN of the real op_api

// The per-batch (start, length) rows an actual_seq_* array gives, checked against T.
aclnnStatus DecodeSeqLens(const aclIntArray *array, const char *name, int64_t total, std::vector<int64_t> *start,
                          std::vector<int64_t> *len) {
    uint64_t count = 0;
    const int64_t *ends = aclemuIntArrayValues(array, &count);
    int64_t prev = 0;
    bool trailing = false;  // the zeros that leave the last batches out
    for (uint64_t i = 0; i < count; ++i) {
        const int64_t end = ends[i];
        trailing = trailing || (end == 0 && prev > 0);
        if (trailing && end != 0)
            return Fail(ACLNN_ERR_PARAM_INVALID, "%s[%lu] is %ld after a trailing 0; only zeros may follow one.",
                        name, static_cast<unsigned long>(i), static_cast<long>(end));
        if (!trailing && end < prev)
            return Fail(ACLNN_ERR_PARAM_INVALID,
                        "%s must hold cumulative sequence lengths (non-decreasing), but %s[%lu] = %ld < %ld.", name,
                        name, static_cast<unsigned long>(i), static_cast<long>(end), static_cast<long>(prev));
        start->push_back(prev);
        len->push_back(trailing ? 0 : end - prev);
        if (!trailing) prev = end;
    }
    if (prev > total)
        return Fail(ACLNN_ERR_PARAM_INVALID, "%s ends at %ld, beyond T = %ld of its tensor.", name,
                    static_cast<long>(prev), static_cast<long>(total));
    return ACLNN_SUCCESS;
}

int64_t Longest(const std::vector<int64_t> &lens) {
    int64_t most = 0;
    for (int64_t n : lens) most = n > most ? n : most;
    return most;
}

// softmaxMax / softmaxSum: [T, N, 8] as the input ("same_as_input"), else the NTD order of
// [N, T, 8]; torch_npu allocates [T, N, 8] for both (op-plugin FlashAttentionKernelNpuOpApi.cpp)
// and reads NTD data from a contiguous one unless it asked for softmax_layout="TND".
aclnnStatus StatView(const Tensor &t, const char *name, bool same_as_input, int64_t T, int64_t N,
                     fa::HeadView *view) {
    const std::vector<int64_t> tnd = {T, N, 8}, ntd = {N, T, 8};
    view->data = t.First();
    if (same_as_input && t.shape == tnd) {
        *view = fa_api::TndView(t);
        return ACLNN_SUCCESS;
    }
    if (!same_as_input && t.shape == ntd) {
        view->sn = t.strides[0];
        view->ss = t.strides[1];
        view->sd = t.strides[2];
        return ACLNN_SUCCESS;
    }
    if (!same_as_input && t.shape == tnd && t.strides == std::vector<int64_t>{N * 8, 8, 1}) {
        view->sn = T * 8;
        view->ss = 8;
        view->sd = 1;
        return ACLNN_SUCCESS;
    }
    return Fail(ACLNN_ERR_PARAM_INVALID, "The %s must be FLOAT %s (softmaxOutLayout %s), got shape %s.", name,
                ShapeText(same_as_input ? tnd : ntd).c_str(), same_as_input ? "same_as_input" : "\"\"",
                ShapeText(t.shape).c_str());
}

aclnnStatus PrepareVarLen(const Request &r, uint64_t *workspaceSize, aclOpExecutor **executor) {
    aclnnStatus st = fa_api::CheckArguments(r, workspaceSize, executor);
    if (st != ACLNN_SUCCESS) return st;
    if (std::strcmp(r.inputLayout, "TND") != 0)
        return Fail(ACLNN_ERR_PARAM_INVALID, "Layout %s is not TND, invalid shape, please check", r.inputLayout);
    const std::string out_layout = r.softmaxOutLayout == nullptr ? "" : r.softmaxOutLayout;
    if (out_layout != "" && out_layout != "same_as_input")
        return Fail(ACLNN_ERR_PARAM_INVALID, "softmaxOutLayout %s is invalid, it should be \"\" or \"same_as_input\".",
                    out_layout.c_str());
    uint64_t q_batches = 0, kv_batches = 0;
    aclemuIntArrayValues(r.actualSeqQLen, &q_batches);
    aclemuIntArrayValues(r.actualSeqKvLen, &kv_batches);
    if (q_batches == 0 || q_batches != kv_batches)
        return Fail(ACLNN_ERR_PARAM_INVALID,
                    "actualSeqQLenOptional and actualSeqKvLenOptional must both hold one cumulative length per "
                    "batch in TND, got %lu and %lu values.",
                    static_cast<unsigned long>(q_batches), static_cast<unsigned long>(kv_batches));
    if (q_batches > kMaxBatches)
        return Fail(ACLNN_ERR_PARAM_INVALID, "actualSeqQLen size and actualSeqKvLen size must <= 20000, but got %lu.",
                    static_cast<unsigned long>(q_batches));

    fa_api::Tensors t;
    if ((st = fa_api::DescribeTensors(r, &t))) return st;
    const Tensor &q = t.q, &k = t.k, &v = t.v, &out = t.out;
    const Tensor *inputs[] = {&q, &k, &v, &out};
    const char *names[] = {"query", "key", "value", "attentionOut"};
    for (int i = 0; i < 4; ++i)
        if (inputs[i]->shape.size() != 3)
            return Fail(ACLNN_ERR_PARAM_INVALID, "The %s dim num %zu does not match inputLayout TND.", names[i],
                        inputs[i]->shape.size());
    const int64_t T1 = q.shape[0], N1 = q.shape[1], D = q.shape[2];
    const int64_t T2 = k.shape[0], N2 = k.shape[1], Dv = v.shape[2];
    if (N1 != r.headNum)
        return Fail(ACLNN_ERR_PARAM_INVALID, "headNum %ld does not match the query N axis %ld.",
                    static_cast<long>(r.headNum), static_cast<long>(N1));
    if (v.shape[0] != T2 || v.shape[1] != N2)
        return Fail(ACLNN_ERR_PARAM_INVALID, "key and value must have the same shape except the head dim.");
    if ((st = fa_api::CheckHeads(N1, N2, D, k.shape[2], Dv))) return st;
    if (out.shape != std::vector<int64_t>{T1, N1, Dv})
        return Fail(ACLNN_ERR_PARAM_INVALID, "The attentionOut shape %s does not match query %s with value head dim %ld.",
                    ShapeText(out.shape).c_str(), ShapeText(q.shape).c_str(), static_cast<long>(Dv));

    fa::Problem p;
    fa::Segments &seg = p.segments;
    if ((st = DecodeSeqLens(r.actualSeqQLen, "actualSeqQLen", T1, &seg.q_start, &seg.q_len)) ||
        (st = DecodeSeqLens(r.actualSeqKvLen, "actualSeqKvLen", T2, &seg.kv_start, &seg.kv_len)))
        return st;
#ifdef SANDBOX_FAULT_VARLEN_IGNORE_LENGTHS
    for (size_t b = 0; b < seg.kv_len.size(); ++b) {
        seg.kv_start[b] = 0;
        seg.kv_len[b] = T2;
    }
#endif
    const int64_t max_s1 = Longest(seg.q_len), max_s2 = Longest(seg.kv_len);
    p.q = fa_api::TndView(q);
    p.k = fa_api::TndView(k);
    p.v = fa_api::TndView(v);
    p.out = fa_api::TndView(out);
    const bool same_as_input = out_layout == "same_as_input";
    if ((st = StatView(t.smax, "softmaxMax", same_as_input, T1, N1, &p.smax)) ||
        (st = StatView(t.ssum, "softmaxSum", same_as_input, T1, N1, &p.ssum)))
        return st;

    if (r.attenMask != nullptr) {
        const auto &ms = t.mask.shape;
        fa::MaskView mv;
        mv.data = reinterpret_cast<const uint8_t *>(t.mask.First());
        // [maxSq, maxSkv] first, then [T1, T2] (the tiling's order); the optimised causal masks
        // (2048 x 2048) of modes 2-4 are accepted, the kernel derives their pattern
        bool per_batch = ms.size() == 2 && ms[0] == max_s1 && ms[1] == max_s2;
        bool by_token = ms.size() == 2 && ms[0] == T1 && ms[1] == T2;
        if (!per_batch && !by_token && !(r.sparseMode >= 2 && r.sparseMode <= 4 && ms.size() == 2))
            return Fail(ACLNN_ERR_PARAM_INVALID,
                        "get unsupported atten_mask shape, the shape is %s. MaxSq=[%ld],  MaxSkv=[%ld], when "
                        "input_layout is TND, the supported atten_mask shape is [MaxSq, MaxSkv].",
                        ShapeText(ms).c_str(), static_cast<long>(max_s1), static_cast<long>(max_s2));
        mv.s1 = t.mask.strides[0];
        mv.s2 = t.mask.strides[1];
        mv.by_token = !per_batch && by_token;
        p.mask = mv;
    }
    if ((st = fa_api::CheckOnDevice(r, t))) return st;

    p.dtype = q.dtype;
    p.B = static_cast<int64_t>(seg.q_len.size());
    p.N1 = N1;
    p.N2 = N2;
    p.S1 = max_s1;
    p.S2 = max_s2;
    p.D = D;
    p.Dv = Dv;
    p.scale = r.scale;
    p.sparse_mode = r.sparseMode;
    p.pre_tokens = r.preTokens;
    p.next_tokens = r.nextTokens;
    return fa_api::MakeExecutor(r, t, p, p.B, workspaceSize, executor);
}

}  // namespace

extern "C" {

aclnnStatus aclnnFlashAttentionVarLenScoreGetWorkspaceSize(
    const aclTensor *query, const aclTensor *key, const aclTensor *value, const aclTensor *realShiftOptional,
    const aclTensor *dropMaskOptional, const aclTensor *paddingMaskOptional, const aclTensor *attenMaskOptional,
    const aclIntArray *prefixOptional, const aclIntArray *actualSeqQLenOptional,
    const aclIntArray *actualSeqKvLenOptional, double scaleValue, double keepProb, int64_t preTokens,
    int64_t nextTokens, int64_t headNum, char *inputLayout, int64_t innerPrecise, int64_t sparseMode,
    const aclTensor *softmaxMaxOut, const aclTensor *softmaxSumOut, const aclTensor *softmaxOutOut,
    const aclTensor *attentionOutOut, uint64_t *workspaceSize, aclOpExecutor **executor) {
    (void)paddingMaskOptional;
    (void)prefixOptional;
    (void)softmaxOutOut;
    Request r{"aclnnFlashAttentionVarLenScore", query, key, value, realShiftOptional, dropMaskOptional,
              attenMaskOptional, softmaxMaxOut, softmaxSumOut, attentionOutOut, scaleValue, keepProb, preTokens,
              nextTokens, headNum, innerPrecise, sparseMode, 1, inputLayout, actualSeqQLenOptional,
              actualSeqKvLenOptional, ""};
    return PrepareVarLen(r, workspaceSize, executor);
}

aclnnStatus aclnnFlashAttentionVarLenScore(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                           const aclrtStream stream) {
    return aclemuLaunch(executor, workspace, workspaceSize, stream);
}

aclnnStatus aclnnFlashAttentionVarLenScoreV4GetWorkspaceSize(
    const aclTensor *query, const aclTensor *key, const aclTensor *value, const aclTensor *realShiftOptional,
    const aclTensor *dropMaskOptional, const aclTensor *paddingMaskOptional, const aclTensor *attenMaskOptional,
    const aclIntArray *prefixOptional, const aclIntArray *actualSeqQLenOptional,
    const aclIntArray *actualSeqKvLenOptional, double scaleValue, double keepProb, int64_t preTokens,
    int64_t nextTokens, int64_t headNum, char *inputLayout, int64_t innerPrecise, int64_t sparseMode,
    char *softmaxOutLayout, const aclTensor *softmaxMaxOut, const aclTensor *softmaxSumOut,
    const aclTensor *softmaxOutOut, const aclTensor *attentionOutOut, uint64_t *workspaceSize,
    aclOpExecutor **executor) {
    (void)paddingMaskOptional;
    (void)prefixOptional;
    (void)softmaxOutOut;
    Request r{"aclnnFlashAttentionVarLenScoreV4", query, key, value, realShiftOptional, dropMaskOptional,
              attenMaskOptional, softmaxMaxOut, softmaxSumOut, attentionOutOut, scaleValue, keepProb, preTokens,
              nextTokens, headNum, innerPrecise, sparseMode, 1, inputLayout, actualSeqQLenOptional,
              actualSeqKvLenOptional, softmaxOutLayout};
    return PrepareVarLen(r, workspaceSize, executor);
}

aclnnStatus aclnnFlashAttentionVarLenScoreV4(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                             const aclrtStream stream) {
    return aclemuLaunch(executor, workspace, workspaceSize, stream);
}

}  // extern "C"
