/*
 * cannbuild sandbox stand-in: what the FlashAttentionScore APIs (dense V1/V2 and
 * VarLen V1/V4) check alike, shared by aclnn_flash_attention_score.cpp and
 * aclnn_flash_attention_var_len_score.cpp (the real op_api keeps both in one file,
 * attention/flash_attention_score/op_api/aclnn_flash_attention_score.cpp).
 */
#ifndef CANNBUILD_STANDIN_FLASH_ATTENTION_SCORE_CHECKS_H_
#define CANNBUILD_STANDIN_FLASH_ATTENTION_SCORE_CHECKS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "aclnn/acl_meta.h"
#include "opdev/op_errno.h"
#include "flash_attention_score_cpu.h"

namespace fa_api {

// An aclTensor's view, read through the public accessors.
struct Tensor {
    std::vector<int64_t> shape;
    std::vector<int64_t> strides;
    int64_t offset = 0;
    aclDataType dtype = ACL_DT_UNDEFINED;
    aclFormat format = ACL_FORMAT_UNDEFINED;
    char *data = nullptr;

    int64_t Elements() const;
    // The first element of the view.
    char *First() const;
};

// One GetWorkspaceSize call's arguments; the VarLen ones are null for the dense APIs.
struct Request {
    const char *api;
    const aclTensor *query, *key, *value, *realShift, *dropMask, *attenMask;
    const aclTensor *softmaxMax, *softmaxSum, *attentionOut;
    double scale, keepProb;
    int64_t preTokens, nextTokens, headNum, innerPrecise, sparseMode, pseType;
    char *inputLayout;
    const aclIntArray *actualSeqQLen = nullptr, *actualSeqKvLen = nullptr;
    const char *softmaxOutLayout = nullptr;  // VarLenV4 only
};

// The tensors of a request, described.
struct Tensors {
    Tensor q, k, v, mask, smax, ssum, out;
};

// Sets aclGetRecentErrMsg() to an AclNN_Parameter_Error and returns `code`.
aclnnStatus Fail(aclnnStatus code, const char *fmt, ...);
std::string ShapeText(const std::vector<int64_t> &shape);

// Null pointers (161001), the device's kernel, and the scalar arguments both kinds of API
// share (pse, dropout, sparse mode, innerPrecise, headNum).
aclnnStatus CheckArguments(const Request &r, uint64_t *workspaceSize, aclOpExecutor **executor);
// Describes every tensor and checks their formats and dtypes.
aclnnStatus DescribeTensors(const Request &r, Tensors *t);
// The head-dim, head-count and GQA rules of the op (dq, dk, dv: N and D of q, k, v).
aclnnStatus CheckHeads(int64_t n1, int64_t n2, int64_t dq, int64_t dk, int64_t dv);
// attentionOut, softmaxMax, softmaxSum and the mask must lie in aclrtMalloc'd memory.
aclnnStatus CheckOnDevice(const Request &r, const Tensors &t);
// A [T, N, D] view of a TND tensor (batch 0; VarLen rows are offsets on the T axis).
fa::HeadView TndView(const Tensor &t);
// The executor that runs `p`, told to the profiler as the FlashAttentionScore kernel;
// `seq_count`: the VarLen batch count (the actual_seq_* inputs), 0 for the dense APIs.
aclnnStatus MakeExecutor(const Request &r, const Tensors &t, const fa::Problem &p, int64_t seq_count,
                         uint64_t *workspaceSize, aclOpExecutor **executor);

}  // namespace fa_api

#endif  // CANNBUILD_STANDIN_FLASH_ATTENTION_SCORE_CHECKS_H_
