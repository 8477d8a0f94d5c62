/* cannbuild sandbox: the single-operator (aclop) API is not emulated; kept for the include chain. */
#ifndef CANNBUILD_EMU_ACL_OP_H_
#define CANNBUILD_EMU_ACL_OP_H_
#include "acl/acl_base.h"
#endif  // CANNBUILD_EMU_ACL_OP_H_
