/*
 * cannbuild sandbox stand-in for ops-transformer's FlashAttention VarLen fp32
 * example (test_aclnn_flash_attention_score_varlen_v4_fp32.cpp; at the 8.3 pin
 * test_aclnn_flash_attention_varlen_score.cpp).  Like the real one it creates its
 * own context (aclrtCreateContext, aclrtSetCurrentContext, aclrtDestroyContext)
 * and calls aclnnFlashAttentionVarLenScoreV4 in TND layout with N=1, D=128,
 * all-ones q/k/v, a zero uint8 [T1, T2] mask and softmaxOutLayout
 * "same_as_input".  The real one runs a single sequence (T1 = T2 = 256); this one
 * runs two of different query lengths, 100 and 156 (T1 = 256), each over its own
 * 256 keys (T2 = 512), so a kernel that lets a query see the other sequence's keys
 * prints softmaxSum 512.  It prints what the real one prints: one
 * "mean result[i] is: x" line per element of attentionOut [T1,N,D], softmaxMax
 * [T1,N,8] and softmaxSum [T1,N,8] (1.0, 128/sqrt(128) and 256 everywhere).
 */
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_flash_attention_score.h"

#define CHECK_RET(cond, return_expr) \
    do {                             \
        if (!(cond)) {               \
            return_expr;             \
        }                            \
    } while (0)

#define LOG_PRINT(message, ...)         \
    do {                                \
        printf(message, ##__VA_ARGS__); \
    } while (0)

int64_t GetShapeSize(const std::vector<int64_t> &shape) {
    int64_t size = 1;
    for (int64_t d : shape) size *= d;
    return size;
}

template <typename T>
int CreateAclTensor(const std::vector<T> &host, const std::vector<int64_t> &shape, void **devAddr,
                    aclDataType dataType, aclTensor **tensor) {
    size_t size = GetShapeSize(shape) * sizeof(T);
    int ret = aclrtMalloc(devAddr, size, ACL_MEM_MALLOC_HUGE_FIRST);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtMalloc failed. ERROR: %d\n", ret); return ret);
    ret = aclrtMemcpy(*devAddr, size, host.data(), size, ACL_MEMCPY_HOST_TO_DEVICE);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtMemcpy failed. ERROR: %d\n", ret); return ret);
    std::vector<int64_t> strides(shape.size(), 1);
    for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; i--) strides[i] = shape[i + 1] * strides[i + 1];
    *tensor = aclCreateTensor(shape.data(), shape.size(), dataType, strides.data(), 0, aclFormat::ACL_FORMAT_ND,
                              shape.data(), shape.size(), *devAddr);
    return 0;
}

template <typename T>
void PrintOut(const std::vector<int64_t> &shape, void *devAddr) {
    int64_t n = GetShapeSize(shape);
    std::vector<T> host(n, 0);
    int ret = aclrtMemcpy(host.data(), n * sizeof(T), devAddr, n * sizeof(T), ACL_MEMCPY_DEVICE_TO_HOST);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("copy result from device to host failed. ERROR: %d\n", ret); return);
    for (int64_t i = 0; i < n; i++) LOG_PRINT("mean result[%ld] is: %f\n", static_cast<long>(i), host[i]);
}

int main() {
    int32_t deviceId = 0;
    aclrtContext context = nullptr;
    aclrtStream stream = nullptr;
    int ret = aclInit(nullptr);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclInit failed. ERROR: %d\n[ERROR msg]%s\n", ret, aclGetRecentErrMsg()); return ret);
    ret = aclrtSetDevice(deviceId);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtSetDevice failed. ERROR: %d\n[ERROR msg]%s\n", ret, aclGetRecentErrMsg()); return ret);
    ret = aclrtCreateContext(&context, deviceId);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtCreateContext failed. ERROR: %d\n", ret); return ret);
    ret = aclrtSetCurrentContext(context);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtSetCurrentContext failed. ERROR: %d\n", ret); return ret);
    ret = aclrtCreateStream(&stream);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtCreateStream failed. ERROR: %d\n", ret); return ret);

    // two sequences: query rows 0-99 attend keys 0-255, query rows 100-255 keys 256-511
    std::vector<int64_t> seqQEnds = {100, 256}, seqKvEnds = {256, 512};
    int64_t N = 1, T1 = seqQEnds.back(), T2 = seqKvEnds.back(), D = 128;
    std::vector<int64_t> qShape = {T1, N, D}, kvShape = {T2, N, D}, maskShape = {T1, T2};
    std::vector<int64_t> statShape = {T1, N, 8}, outShape = {T1, N, D};
    std::vector<float> q(GetShapeSize(qShape), 1.0f), kv(GetShapeSize(kvShape), 1.0f);
    std::vector<uint8_t> mask(GetShapeSize(maskShape), 0);
    std::vector<float> stat(GetShapeSize(statShape), 0.0f), out(GetShapeSize(outShape), 0.0f);
    void *qDev = nullptr, *kDev = nullptr, *vDev = nullptr, *maskDev = nullptr, *maxDev = nullptr,
         *sumDev = nullptr, *outDev = nullptr;
    aclTensor *qT = nullptr, *kT = nullptr, *vT = nullptr, *maskT = nullptr, *maxT = nullptr, *sumT = nullptr,
              *outT = nullptr;
    CreateAclTensor(q, qShape, &qDev, aclDataType::ACL_FLOAT, &qT);
    CreateAclTensor(kv, kvShape, &kDev, aclDataType::ACL_FLOAT, &kT);
    CreateAclTensor(kv, kvShape, &vDev, aclDataType::ACL_FLOAT, &vT);
    CreateAclTensor(mask, maskShape, &maskDev, aclDataType::ACL_UINT8, &maskT);
    CreateAclTensor(stat, statShape, &maxDev, aclDataType::ACL_FLOAT, &maxT);
    CreateAclTensor(stat, statShape, &sumDev, aclDataType::ACL_FLOAT, &sumT);
    CreateAclTensor(out, outShape, &outDev, aclDataType::ACL_FLOAT, &outT);

    std::vector<int64_t> zero = {0};
    aclIntArray *prefix = aclCreateIntArray(zero.data(), 1);
    aclIntArray *seqQ = aclCreateIntArray(seqQEnds.data(), seqQEnds.size());
    aclIntArray *seqKv = aclCreateIntArray(seqKvEnds.data(), seqKvEnds.size());
    double scale = 1.0 / std::sqrt(static_cast<double>(D));
    int64_t preTokens = 2147483647, nextTokens = 2147483647;
    char layout[5] = {'T', 'N', 'D', 0};
    char softmaxOutLayout[] = "same_as_input";
    uint64_t workspaceSize = 0;
    aclOpExecutor *executor = nullptr;
    ret = aclnnFlashAttentionVarLenScoreV4GetWorkspaceSize(qT, kT, vT, nullptr, nullptr, nullptr, maskT, prefix, seqQ,
                                                           seqKv, scale, 1.0, preTokens, nextTokens, N, layout, 0, 0,
                                                           softmaxOutLayout, maxT, sumT, nullptr, outT,
                                                           &workspaceSize, &executor);
    CHECK_RET(ret == ACL_SUCCESS,
              LOG_PRINT("aclnnFlashAttentionVarLenScoreV4GetWorkspaceSize failed. ERROR: %d\n[ERROR msg]%s\n", ret,
                        aclGetRecentErrMsg());
              return ret);
    void *workspace = nullptr;
    if (workspaceSize > 0) {
        ret = aclrtMalloc(&workspace, workspaceSize, ACL_MEM_MALLOC_HUGE_FIRST);
        CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("allocate workspace failed. ERROR: %d\n", ret); return ret);
    }
    ret = aclnnFlashAttentionVarLenScoreV4(workspace, workspaceSize, executor, stream);
    CHECK_RET(ret == ACL_SUCCESS,
              LOG_PRINT("aclnnFlashAttentionVarLenScoreV4 failed. ERROR: %d\n[ERROR msg]%s\n", ret,
                        aclGetRecentErrMsg());
              return ret);
    ret = aclrtSynchronizeStream(stream);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtSynchronizeStream failed. ERROR: %d\n", ret); return ret);

    PrintOut<float>(outShape, outDev);
    PrintOut<float>(statShape, maxDev);
    PrintOut<float>(statShape, sumDev);

    aclDestroyTensor(qT);
    aclDestroyTensor(kT);
    aclDestroyTensor(vT);
    aclDestroyTensor(maskT);
    aclDestroyTensor(maxT);
    aclDestroyTensor(sumT);
    aclDestroyTensor(outT);
    aclDestroyIntArray(prefix);
    aclDestroyIntArray(seqQ);
    aclDestroyIntArray(seqKv);
    aclrtFree(qDev);
    aclrtFree(kDev);
    aclrtFree(vDev);
    aclrtFree(maskDev);
    aclrtFree(maxDev);
    aclrtFree(sumDev);
    aclrtFree(outDev);
    if (workspaceSize > 0) aclrtFree(workspace);
    aclrtDestroyStream(stream);
    aclrtDestroyContext(context);
    aclrtResetDevice(deviceId);
    aclFinalize();
    return 0;
}
