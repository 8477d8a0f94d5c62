/*
 * cannbuild sandbox stand-in: ops-math's aclnnExpSegsum, the declarations of
 * math/segsum/op_host/op_api/aclnn_segsum.h:63,78 (same parameter order and types).
 */
#ifndef CANNBUILD_STANDIN_ACLNN_SEGSUM_H_
#define CANNBUILD_STANDIN_ACLNN_SEGSUM_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

aclnnStatus aclnnExpSegsumGetWorkspaceSize(const aclTensor *self, aclTensor *out, uint64_t *workspaceSize,
                                           aclOpExecutor **executor);

aclnnStatus aclnnExpSegsum(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor, aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif  // CANNBUILD_STANDIN_ACLNN_SEGSUM_H_
