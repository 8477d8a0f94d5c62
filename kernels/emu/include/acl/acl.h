/* cannbuild sandbox: the AscendCL umbrella header, same include chain as the real one. */
#ifndef CANNBUILD_EMU_ACL_H_
#define CANNBUILD_EMU_ACL_H_

#include "acl/acl_rt.h"
#include "acl/acl_op.h"
#include "acl/acl_mdl.h"

#endif  // CANNBUILD_EMU_ACL_H_
