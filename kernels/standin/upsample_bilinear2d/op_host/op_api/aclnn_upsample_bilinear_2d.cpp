// cannbuild sandbox stand-in: aclnnUpsampleBilinear2d, checked as ops-cv's op_api checks it
// (image/upsample_bilinear2d/op_host/op_api/aclnn_upsample_bilinear_2d.cpp: self or out null;
// a dtype outside BFLOAT16/FLOAT16/FLOAT, out's dtype not self's, formats that differ or are
// not NCHW/NHWC, self or out not 4-D, N or C changed, a negative scale, outputSize not two
// values or not out's H and W -> 161002), then run by the CPU kernel.  The stand-in takes
// NCHW only (NHWC is refused with 161002, as FlashAttention's stand-in refuses what it lacks).
// Kernels for ascend910b and ascend910_93 (upsample_bilinear2d_def.cpp:42-43).

#include "aclnn_upsample_bilinear_2d.h"

#include "../../op_kernel/upsample_bilinear2d_cpu.h"

#ifdef SANDBOX_FAULT_BUILD_FAIL
static_assert(false, "cannbuild sandbox fault build-fail:ops-cv");
#endif

namespace {

struct Problem {
    standin::View self, out;
    double scale_h, scale_w;
    bool align_corners;
};

aclnnStatus CheckOutputSize(const standin::View &out, const aclIntArray *outputSize) {
    if (outputSize == nullptr) return standin::Fail(ACLNN_ERR_PARAM_INVALID, "outputSize must not be null.");
    uint64_t count = 0;
    const int64_t *size = aclemuIntArrayValues(outputSize, &count);
    if (count != 2)
        return standin::Fail(ACLNN_ERR_PARAM_INVALID, "outputSize size must be 2, but got %lu.",
                             static_cast<unsigned long>(count));
    if (size[0] != out.shape[2] || size[1] != out.shape[3])
        return standin::Fail(ACLNN_ERR_PARAM_INVALID,
                             "Expected output size (H: %ld, W: %ld), but got output tensor size (H: %ld, W: %ld).",
                             static_cast<long>(size[0]), static_cast<long>(size[1]), static_cast<long>(out.shape[2]),
                             static_cast<long>(out.shape[3]));
    return ACLNN_SUCCESS;
}

aclnnStatus CheckParams(const Problem &p, const aclIntArray *outputSize) {
    if (!standin::FloatingDtype(p.self.dtype))
        return standin::Fail(ACLNN_ERR_PARAM_INVALID,
                             "Tensor self not implemented for %s, should be in dtype support list "
                             "[DT_FLOAT,DT_FLOAT16,DT_BF16,].",
                             standin::DtypeName(p.self.dtype));
    if (p.out.dtype != p.self.dtype)
        return standin::Fail(ACLNN_ERR_PARAM_INVALID, "Expected dtype of self to be equal to %s but got %s.",
                             standin::DtypeName(p.out.dtype), standin::DtypeName(p.self.dtype));
    if (p.self.format != p.out.format)
        return standin::Fail(ACLNN_ERR_PARAM_INVALID, "Format of input and output should be equal.");
    if (p.self.format == ACL_FORMAT_NHWC)
        return standin::Fail(ACLNN_ERR_PARAM_INVALID, "NHWC is not supported by the cannbuild sandbox (NCHW only).");
    if (p.self.format != ACL_FORMAT_NCHW)
        return standin::Fail(ACLNN_ERR_PARAM_INVALID, "Do not support this format of input and output.");
    if (p.self.shape.size() != 4 || p.out.shape.size() != 4)
        return standin::Fail(ACLNN_ERR_PARAM_INVALID, "self and out must be 4-D, got %s and %s.",
                             standin::ShapeText(p.self.shape).c_str(), standin::ShapeText(p.out.shape).c_str());
    if (p.self.shape[0] != p.out.shape[0] || p.self.shape[1] != p.out.shape[1])
        return standin::Fail(ACLNN_ERR_PARAM_INVALID, "The N and C of self %s and out %s must be equal.",
                             standin::ShapeText(p.self.shape).c_str(), standin::ShapeText(p.out.shape).c_str());
    if (p.scale_w < 0 || p.scale_h < 0)
        return standin::Fail(ACLNN_ERR_PARAM_INVALID,
                             "w scales and h scales cannot be negative , w_scales [%f], h_scales [%f].", p.scale_w,
                             p.scale_h);
    return CheckOutputSize(p.out, outputSize);
}

}  // namespace

extern "C" {

aclnnStatus aclnnUpsampleBilinear2dGetWorkspaceSize(const aclTensor *self, const aclIntArray *outputSize,
                                                    const bool alignCorners, const double scalesH,
                                                    const double scalesW, aclTensor *out, uint64_t *workspaceSize,
                                                    aclOpExecutor **executor) {
    if (workspaceSize == nullptr || executor == nullptr)
        return standin::Fail(ACLNN_ERR_PARAM_NULLPTR, "The workspaceSize and executor cannot be nullptr.");
    if (self == nullptr) return standin::Fail(ACLNN_ERR_PARAM_NULLPTR, "The self cannot be nullptr.");
    if (out == nullptr) return standin::Fail(ACLNN_ERR_PARAM_NULLPTR, "The out cannot be nullptr.");
    aclnnStatus st = standin::CheckKernelForDevice(
        "upsample_bilinear2d", "UpsampleBilinear2d",
        reinterpret_cast<void *>(&aclnnUpsampleBilinear2dGetWorkspaceSize));
    if (st != ACLNN_SUCCESS) return st;
    Problem p;
    p.scale_h = scalesH;
    p.scale_w = scalesW;
    p.align_corners = alignCorners;
    if ((st = standin::Describe(self, "self", &p.self)) || (st = standin::Describe(out, "out", &p.out))) return st;
    if ((st = CheckParams(p, outputSize))) return st;
    if (!standin::OnDevice(p.self) || !standin::OnDevice(p.out))
        return standin::Fail(ACLNN_ERR_PARAM_INVALID,
                             "The self or out data is not device memory (allocate it with aclrtMalloc).");
    *workspaceSize = 0;
    auto *ctx = new Problem(p);
    *executor = aclemuCreateExecutor(
        [](void *c, void *, uint64_t) -> aclnnStatus {
            const auto *prob = static_cast<Problem *>(c);
            if (prob->out.Elements() > 0)
                upsample::Forward(prob->self, prob->out, prob->scale_h, prob->scale_w, prob->align_corners);
            return ACLNN_SUCCESS;
        },
        [](void *c) { delete static_cast<Problem *>(c); }, ctx);
    if (*executor == nullptr) {
        delete ctx;
        return standin::Fail(ACLNN_ERR_INNER_CREATE_EXECUTOR, "failed to create the executor.");
    }
    standin::DescribeKernel(*executor, "aclnnUpsampleBilinear2d", "UpsampleBilinear2d", p.self, p.out);
    return ACLNN_SUCCESS;
}

aclnnStatus aclnnUpsampleBilinear2d(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                    aclrtStream stream) {
    return aclemuLaunch(executor, workspace, workspaceSize, stream);
}

}  // extern "C"
