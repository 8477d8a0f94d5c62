/*
 * cannbuild sandbox stand-in: ops-cv's aclnnUpsampleBilinear2d, the declarations of
 * image/upsample_bilinear2d/op_host/op_api/aclnn_upsample_bilinear_2d.h:24-33 (same parameter
 * order and types).
 */
#ifndef CANNBUILD_STANDIN_ACLNN_UPSAMPLE_BILINEAR_2D_H_
#define CANNBUILD_STANDIN_ACLNN_UPSAMPLE_BILINEAR_2D_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

aclnnStatus aclnnUpsampleBilinear2dGetWorkspaceSize(const aclTensor *self, const aclIntArray *outputSize,
                                                    const bool alignCorners, const double scalesH,
                                                    const double scalesW, aclTensor *out, uint64_t *workspaceSize,
                                                    aclOpExecutor **executor);

aclnnStatus aclnnUpsampleBilinear2d(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                    aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif  // CANNBUILD_STANDIN_ACLNN_UPSAMPLE_BILINEAR_2D_H_
