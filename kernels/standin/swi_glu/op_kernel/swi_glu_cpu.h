// cannbuild sandbox stand-in: the SwiGlu kernel on the CPU.
#ifndef CANNBUILD_STANDIN_SWI_GLU_CPU_H_
#define CANNBUILD_STANDIN_SWI_GLU_CPU_H_

#include "common/stand_in/standin_op.h"

namespace swi_glu {

// out = Swish(A) * B = A * sigmoid(A) * B, A and B the first and second half of x along
// `dim` (docs/aclnnSwiGlu.md:16-20).
void Forward(const standin::View &x, int64_t dim, const standin::View &out);

}  // namespace swi_glu

#endif  // CANNBUILD_STANDIN_SWI_GLU_CPU_H_
