// cannbuild sandbox stand-in: the UpsampleBilinear2d kernel on the CPU (NCHW).
#ifndef CANNBUILD_STANDIN_UPSAMPLE_BILINEAR2D_CPU_H_
#define CANNBUILD_STANDIN_UPSAMPLE_BILINEAR2D_CPU_H_

#include "common/stand_in/standin_op.h"

namespace upsample {

// The source coordinate step along one axis (docs/aclnnUpsampleBilinear2d.md:30-43 and the
// op_api's GetBilinearScales: an unchanged size steps by 1).
double AxisScale(int64_t in, int64_t out, double scale, bool align_corners);

// Each output point from its four source neighbours, weighted by distance
// (docs/aclnnUpsampleBilinear2d.md:45-80).
void Forward(const standin::View &self, const standin::View &out, double scale_h, double scale_w,
             bool align_corners);

}  // namespace upsample

#endif  // CANNBUILD_STANDIN_UPSAMPLE_BILINEAR2D_CPU_H_
