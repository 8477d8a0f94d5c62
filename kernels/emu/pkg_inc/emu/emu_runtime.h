/*
 * cannbuild sandbox internals shared by the emulated runtime (libascendcl),
 * nnopbase and the stand-in operators.  Not a CANN API: nothing outside the
 * sandbox may include this.
 */
#ifndef CANNBUILD_EMU_RUNTIME_H_
#define CANNBUILD_EMU_RUNTIME_H_

#include <cstddef>
#include <cstdint>

#include "aclnn/acl_meta.h"

#ifdef __cplusplus
extern "C" {
#endif

/* libascendcl: what aclGetRecentErrMsg() returns next on this thread. */
ACL_FUNC_VISIBILITY void aclemuSetRecentErrMsg(const char *msg);
/* libascendcl: 1 when [ptr, ptr + bytes) lies inside one aclrtMalloc block. */
ACL_FUNC_VISIBILITY int aclemuIsDeviceRange(const void *ptr, size_t bytes);
/* libascendcl: number of emulated NPUs (0 means no device). */
ACL_FUNC_VISIBILITY int aclemuDeviceCount(void);

/* libnnopbase: an aclIntArray's values and count (what op_api reads through opdev's
 * aclIntArray::Size() and operator[]); NULL and 0 for a null or empty array. */
ACL_FUNC_VISIBILITY const int64_t *aclemuIntArrayValues(const aclIntArray *array, uint64_t *size);

typedef aclnnStatus (*aclemuRunFn)(void *ctx, void *workspace, uint64_t workspaceSize);
typedef void (*aclemuReleaseFn)(void *ctx);

/* libnnopbase: the executor a first-phase GetWorkspaceSize call hands out. */
ACL_FUNC_VISIBILITY aclOpExecutor *aclemuCreateExecutor(aclemuRunFn run, aclemuReleaseFn release, void *ctx);
/*
 * libascendcl: the emulated device profiler.  With CANNBUILD_EMU_PROFILE_DIR set, every
 * kernel is timed and, at aclFinalize (or process exit), written there as a torch_npu
 * profiler output (<host>_<pid>_<time>_ascend_pt/ASCEND_PROFILER_OUTPUT/kernel_details.csv
 * and trace_view.json, real headers and quirks; CANNBUILD_EMU_PROFILE_LEVEL=Level0|Level1).
 */
typedef struct aclemuKernelDesc {
    const char *name;         /* aclnn<Api>_<KernelImpl>_<OpType> */
    const char *opType;       /* FlashAttentionScore, BatchMatMulV2, ... */
    const char *coreType;     /* AI_CORE | AI_VECTOR_CORE | MIX_AIC | MIX_AIV */
    uint32_t blockDim;        /* 0: the SoC's core count for coreType */
    uint32_t mixBlockDim;     /* 0: none, or the SoC's vector cores for MIX_AIC */
    const char *inputShapes;  /* "1,8,512,128;1,8,512,128;..." (may be NULL) */
    const char *inputDtypes;  /* "FLOAT16;FLOAT16;..." */
    const char *inputFormats;
    const char *outputShapes;
    const char *outputDtypes;
    const char *outputFormats;
} aclemuKernelDesc;
/* 1 when kernels are being recorded. */
ACL_FUNC_VISIBILITY int aclemuProfiling(void);
/* The API call `api` (aclnnFlashAttentionScore) starts a kernel on `stream`: a token. */
ACL_FUNC_VISIBILITY uint64_t aclemuKernelBegin(const char *api, aclrtStream stream);
/* The kernel of `token` ran from its device start until now. */
ACL_FUNC_VISIBILITY void aclemuKernelRun(uint64_t token);
ACL_FUNC_VISIBILITY void aclemuKernelEnd(uint64_t token, const aclemuKernelDesc *desc);

/* libnnopbase: what aclemuLaunch reports to the profiler for this executor (copied). */
ACL_FUNC_VISIBILITY void aclemuSetExecutorKernel(aclOpExecutor *executor, const char *api,
                                                 const aclemuKernelDesc *desc);
/* libnnopbase: the second phase; frees a non-repeatable executor afterwards. */
ACL_FUNC_VISIBILITY aclnnStatus aclemuLaunch(aclOpExecutor *executor, void *workspace,
                                             uint64_t workspaceSize, aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif  // CANNBUILD_EMU_RUNTIME_H_
