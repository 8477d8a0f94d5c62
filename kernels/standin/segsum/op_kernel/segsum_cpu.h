// cannbuild sandbox stand-in: the Segsum kernel on the CPU.
#ifndef CANNBUILD_STANDIN_SEGSUM_CPU_H_
#define CANNBUILD_STANDIN_SEGSUM_CPU_H_

#include "common/stand_in/standin_op.h"

namespace segsum {

// out[..., i, j] = exp(x[..., j+1] + ... + x[..., i]) for j <= i, 0 above the diagonal
// (docs/aclnnExpSegsum.md steps 1-8: the diagonal sums nothing, exp(0) = 1).
void Forward(const standin::View &self, const standin::View &out);

}  // namespace segsum

#endif  // CANNBUILD_STANDIN_SEGSUM_CPU_H_
