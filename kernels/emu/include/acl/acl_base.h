/* cannbuild sandbox: acl_base.h pulls in the base types and error codes. */
#ifndef CANNBUILD_EMU_ACL_BASE_H_
#define CANNBUILD_EMU_ACL_BASE_H_

#include "acl/acl_base_rt.h"
#include "acl/error_codes/rt_error_codes.h"
#include "acl/error_codes/ge_error_codes.h"

#endif  // CANNBUILD_EMU_ACL_BASE_H_
