/* cannbuild sandbox: aclnn entry points; aclInit also initialises aclnn, so aclnnInit is optional. */
#ifndef CANNBUILD_EMU_ACLNN_BASE_H_
#define CANNBUILD_EMU_ACLNN_BASE_H_

#include "aclnn/acl_meta.h"

#ifdef __cplusplus
extern "C" {
#endif

ACL_FUNC_VISIBILITY aclnnStatus aclnnInit(const char *configPath);
ACL_FUNC_VISIBILITY aclnnStatus aclnnFinalize();

#ifdef __cplusplus
}
#endif

#endif  // CANNBUILD_EMU_ACLNN_BASE_H_
