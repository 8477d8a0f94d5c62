/* cannbuild sandbox: the AscendCL umbrella header, same include chain as the real one. */
#ifndef CANNBUILD_EMU_ACL_H_
#define CANNBUILD_EMU_ACL_H_
/* the emulation's subset of the real headers: runtime/acl_rt_extra.h adds what it lacks */
#define CANNBUILD_EMU_ACL_SUBSET 1

#include "acl/acl_rt.h"
#include "acl/acl_op.h"
#include "acl/acl_mdl.h"

#endif  // CANNBUILD_EMU_ACL_H_
