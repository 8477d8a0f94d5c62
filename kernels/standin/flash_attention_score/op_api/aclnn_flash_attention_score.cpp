// cannbuild sandbox stand-in: aclnnFlashAttentionScore / V2 (layouts BSH, SBH, BSND,
// BNSD), checked like the real op_api (see flash_attention_score_checks.cpp for what all
// the FlashAttentionScore APIs share) and run by the CPU kernel.

#include "aclnn_flash_attention_score.h"

#include <algorithm>
#include <cctype>
#include <string>
#include <vector>

#include "emu/emu_runtime.h"
#include "flash_attention_score_checks.h"

#ifdef SANDBOX_FAULT_BUILD_FAIL
static_assert(false, "cannbuild sandbox fault build-fail:ops-transformer");
#endif

namespace {

using fa_api::Fail;
using fa_api::Request;
using fa_api::ShapeText;
using fa_api::Tensor;

struct Dims {
    int64_t B, N, S, D;
};

// Map a layout to (B, N, S, D) sizes and (b, n, s, d) element strides.
aclnnStatus Analyse(const std::string &layout, const Tensor &t, const char *name, int64_t head_dim_or_heads,
                    bool heads_given, Dims *dims, fa::HeadView *view) {
    const auto &sh = t.shape;
    const auto &st = t.strides;
    if (layout == "BSH" || layout == "SBH") {
        bool bsh = layout == "BSH";
        int64_t H = sh[2];
        int64_t D = heads_given ? H / head_dim_or_heads : head_dim_or_heads;
        if (heads_given && (head_dim_or_heads <= 0 || H % head_dim_or_heads != 0))
            return Fail(ACLNN_ERR_PARAM_INVALID, "The %s hidden size %ld is not a multiple of headNum %ld.", name,
                        static_cast<long>(H), static_cast<long>(head_dim_or_heads));
        if (!heads_given && (D <= 0 || H % D != 0))
            return Fail(ACLNN_ERR_PARAM_INVALID, "The %s hidden size %ld is not a multiple of the head dim %ld.",
                        name, static_cast<long>(H), static_cast<long>(D));
        dims->B = bsh ? sh[0] : sh[1];
        dims->S = bsh ? sh[1] : sh[0];
        dims->D = D;
        dims->N = H / D;
        view->sb = bsh ? st[0] : st[1];
        view->ss = bsh ? st[1] : st[0];
        view->sd = st[2];
        view->sn = D * st[2];
    } else if (layout == "BSND") {
        *dims = {sh[0], sh[2], sh[1], sh[3]};
        view->sb = st[0];
        view->ss = st[1];
        view->sn = st[2];
        view->sd = st[3];
    } else {  // BNSD
        *dims = {sh[0], sh[1], sh[2], sh[3]};
        view->sb = st[0];
        view->sn = st[1];
        view->ss = st[2];
        view->sd = st[3];
    }
    view->data = t.First();
    return ACLNN_SUCCESS;
}

aclnnStatus Prepare(const Request &r, uint64_t *workspaceSize, aclOpExecutor **executor) {
    aclnnStatus st = fa_api::CheckArguments(r, workspaceSize, executor);
    if (st != ACLNN_SUCCESS) return st;
    std::string layout = r.inputLayout;
    std::transform(layout.begin(), layout.end(), layout.begin(), [](unsigned char c) { return std::toupper(c); });
    if (layout == "TND")
        return Fail(ACLNN_ERR_PARAM_INVALID, "inputLayout TND is only supported by the VarLen APIs.");
    if (layout != "BSH" && layout != "SBH" && layout != "BSND" && layout != "BNSD")
        return Fail(ACLNN_ERR_PARAM_INVALID, "inputLayout %s is invalid, it should be BSH, SBH, BSND or BNSD.",
                    r.inputLayout);
    const size_t rank = layout.size();

    fa_api::Tensors t;
    if ((st = fa_api::DescribeTensors(r, &t))) return st;
    const Tensor &q = t.q, &k = t.k, &v = t.v, &mask = t.mask, &smax = t.smax, &ssum = t.ssum, &out = t.out;
    const Tensor *inputs[] = {&q, &k, &v};
    const char *names[] = {"query", "key", "value"};
    for (int i = 0; i < 3; ++i) {
        if (inputs[i]->shape.size() != rank)
            return Fail(ACLNN_ERR_PARAM_INVALID, "The %s dim num %zu does not match inputLayout %s.", names[i],
                        inputs[i]->shape.size(), layout.c_str());
    }

    Dims dq, dk, dv;
    fa::Problem p;
    if ((st = Analyse(layout, q, "query", r.headNum, true, &dq, &p.q))) return st;
    if (layout == "BSND" || layout == "BNSD") {
        if (dq.N != r.headNum)
            return Fail(ACLNN_ERR_PARAM_INVALID, "headNum %ld does not match the query N axis %ld.",
                        static_cast<long>(r.headNum), static_cast<long>(dq.N));
    }
    if ((st = Analyse(layout, k, "key", dq.D, false, &dk, &p.k))) return st;
    if (layout == "BSH" || layout == "SBH") {
        // value's head dim follows from key's head count
        int64_t hv = v.shape[2];
        if (dk.N <= 0 || hv % dk.N != 0)
            return Fail(ACLNN_ERR_PARAM_INVALID, "The value hidden size %ld is not a multiple of the key head num %ld.",
                        static_cast<long>(hv), static_cast<long>(dk.N));
        if ((st = Analyse(layout, v, "value", hv / dk.N, false, &dv, &p.v))) return st;
    } else if ((st = Analyse(layout, v, "value", 0, false, &dv, &p.v))) {
        return st;
    }
    if (dq.B != dk.B || dq.B != dv.B)
        return Fail(ACLNN_ERR_PARAM_INVALID, "query, key and value must have the same batch size.");
    if (dk.S != dv.S || dk.N != dv.N)
        return Fail(ACLNN_ERR_PARAM_INVALID, "key and value must have the same shape except the head dim.");
    if ((st = fa_api::CheckHeads(dq.N, dk.N, dq.D, dk.D, dv.D))) return st;

    // outputs
    Dims dout;
    if (out.shape.size() != rank ||
        (st = Analyse(layout, out, "attentionOut", dv.D, false, &dout, &p.out)) ||
        dout.B != dq.B || dout.S != dq.S || dout.N != dq.N || dout.D != dv.D)
        return Fail(ACLNN_ERR_PARAM_INVALID, "The attentionOut shape %s does not match query %s with value head dim %ld.",
                    ShapeText(out.shape).c_str(), ShapeText(q.shape).c_str(), static_cast<long>(dv.D));
    std::vector<int64_t> stat_shape = {dq.B, dq.N, dq.S, 8};
    const Tensor *stats[] = {&smax, &ssum};
    fa::HeadView *stat_views[] = {&p.smax, &p.ssum};
    const char *stat_names[] = {"softmaxMax", "softmaxSum"};
    for (int i = 0; i < 2; ++i) {
        if (stats[i]->shape != stat_shape)
            return Fail(ACLNN_ERR_PARAM_INVALID, "The %s must be FLOAT %s, got dtype %d shape %s.", stat_names[i],
                        ShapeText(stat_shape).c_str(), static_cast<int>(stats[i]->dtype),
                        ShapeText(stats[i]->shape).c_str());
        const auto &s = stats[i]->strides;
        *stat_views[i] = {stats[i]->First(), s[0], s[1], s[2], s[3]};
    }

    // mask
    if (r.attenMask != nullptr) {
        const auto &ms = mask.shape;
        const auto &mt = mask.strides;
        fa::MaskView mv;
        mv.data = reinterpret_cast<const uint8_t *>(mask.First());
        // accepted 4-D shapes: [B,N,S1,S2], [B,1,S1,S2], [1,1,S1,S2]
        bool full = ms.size() == 4 && ms[2] == dq.S && ms[3] == dk.S &&
                    ((ms[0] == dq.B && (ms[1] == dq.N || ms[1] == 1)) || (ms[0] == 1 && ms[1] == 1));
        if (ms.size() == 2 && ms[0] == dq.S && ms[1] == dk.S) {
            mv.s1 = mt[0];
            mv.s2 = mt[1];
        } else if (full) {
            mv.sb = ms[0] == 1 ? 0 : mt[0];
            mv.sn = ms[1] == 1 ? 0 : mt[1];
            mv.s1 = mt[2];
            mv.s2 = mt[3];
        } else if (r.sparseMode >= 2 && r.sparseMode <= 4 && ms.size() == 2) {
            // optimised causal masks (2048 x 2048) are accepted; the kernel derives the pattern
            mv.s1 = mt[0];
            mv.s2 = mt[1];
        } else {
            return Fail(ACLNN_ERR_PARAM_INVALID,
                        "The attenMask shape %s is invalid, expected [B,N,S1,S2], [B,1,S1,S2], [1,1,S1,S2] or [S1,S2] "
                        "with S1=%ld S2=%ld.",
                        ShapeText(ms).c_str(), static_cast<long>(dq.S), static_cast<long>(dk.S));
        }
        p.mask = mv;
    }
    if ((st = fa_api::CheckOnDevice(r, t))) return st;

    p.dtype = q.dtype;
    p.B = dq.B;
    p.N1 = dq.N;
    p.N2 = dk.N;
    p.S1 = dq.S;
    p.S2 = dk.S;
    p.D = dq.D;
    p.Dv = dv.D;
    p.scale = r.scale;
    p.sparse_mode = r.sparseMode;
    p.pre_tokens = r.preTokens;
    p.next_tokens = r.nextTokens;
    return fa_api::MakeExecutor(r, t, p, 0, workspaceSize, executor);
}

}  // namespace

extern "C" {

aclnnStatus aclnnFlashAttentionScoreGetWorkspaceSize(
    const aclTensor *query, const aclTensor *key, const aclTensor *value, const aclTensor *realShiftOptional,
    const aclTensor *dropMaskOptional, const aclTensor *paddingMaskOptional, const aclTensor *attenMaskOptional,
    const aclIntArray *prefixOptional, double scaleValue, double keepProb, int64_t preTokens, int64_t nextTokens,
    int64_t headNum, char *inputLayout, int64_t innerPrecise, int64_t sparseMode, const aclTensor *softmaxMaxOut,
    const aclTensor *softmaxSumOut, const aclTensor *softmaxOutOut, const aclTensor *attentionOutOut,
    uint64_t *workspaceSize, aclOpExecutor **executor) {
    (void)paddingMaskOptional;
    (void)prefixOptional;
    (void)softmaxOutOut;
    Request r{"aclnnFlashAttentionScore", query, key, value, realShiftOptional, dropMaskOptional,
              attenMaskOptional, softmaxMaxOut, softmaxSumOut, attentionOutOut, scaleValue, keepProb, preTokens,
              nextTokens, headNum, innerPrecise, sparseMode, 1, inputLayout};
    return Prepare(r, workspaceSize, executor);
}

aclnnStatus aclnnFlashAttentionScore(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                     const aclrtStream stream) {
    return aclemuLaunch(executor, workspace, workspaceSize, stream);
}

#ifndef SANDBOX_FAULT_MISSING_SYMBOL
aclnnStatus aclnnFlashAttentionScoreV2GetWorkspaceSize(
    const aclTensor *query, const aclTensor *key, const aclTensor *value, const aclTensor *realShiftOptional,
    const aclTensor *dropMaskOptional, const aclTensor *paddingMaskOptional, const aclTensor *attenMaskOptional,
    const aclIntArray *prefixOptional, const aclIntArray *qStartIdxOptional, const aclIntArray *kvStartIdxOptional,
    double scaleValue, double keepProb, int64_t preTokens, int64_t nextTokens, int64_t headNum, char *inputLayout,
    int64_t innerPrecise, int64_t sparseMode, int64_t pseType, const aclTensor *softmaxMaxOut,
    const aclTensor *softmaxSumOut, const aclTensor *softmaxOutOut, const aclTensor *attentionOutOut,
    uint64_t *workspaceSize, aclOpExecutor **executor) {
    (void)paddingMaskOptional;
    (void)prefixOptional;
    (void)qStartIdxOptional;
    (void)kvStartIdxOptional;
    (void)softmaxOutOut;
    Request r{"aclnnFlashAttentionScoreV2", query, key, value, realShiftOptional, dropMaskOptional,
              attenMaskOptional, softmaxMaxOut, softmaxSumOut, attentionOutOut, scaleValue, keepProb, preTokens,
              nextTokens, headNum, innerPrecise, sparseMode, pseType, inputLayout};
    return Prepare(r, workspaceSize, executor);
}

aclnnStatus aclnnFlashAttentionScoreV2(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                       const aclrtStream stream) {
    return aclemuLaunch(executor, workspace, workspaceSize, stream);
}
#endif  // SANDBOX_FAULT_MISSING_SYMBOL

}  // extern "C"
