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

typedef aclnnStatus (*aclemuRunFn)(void *ctx, void *workspace, uint64_t workspaceSize);
typedef void (*aclemuReleaseFn)(void *ctx);

/* libnnopbase: the executor a first-phase GetWorkspaceSize call hands out. */
ACL_FUNC_VISIBILITY aclOpExecutor *aclemuCreateExecutor(aclemuRunFn run, aclemuReleaseFn release, void *ctx);
/* libnnopbase: the second phase; frees a non-repeatable executor afterwards. */
ACL_FUNC_VISIBILITY aclnnStatus aclemuLaunch(aclOpExecutor *executor, void *workspace,
                                             uint64_t workspaceSize, aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif  // CANNBUILD_EMU_RUNTIME_H_
