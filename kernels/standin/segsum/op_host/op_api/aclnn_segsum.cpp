// cannbuild sandbox stand-in: aclnnExpSegsum, checked as ops-math's op_api checks it
// (math/segsum/op_host/op_api/aclnn_segsum.cpp: null pointers -> 161001; a dtype outside
// FLOAT16/FLOAT/BFLOAT16, out's dtype not self's, self not 3-D or 4-D, out not self's shape
// plus its last dim again, a format other than ND -> 161002; an empty self needs no
// workspace and runs nothing), then run by the CPU kernel.
//
// Like a real package it only runs on SoCs it carries kernels for (ascend910b and
// ascend910_93: segsum_def.cpp:30-31 has no ascend950 config).

#include "aclnn_segsum.h"

#include "../../op_kernel/segsum_cpu.h"

#ifdef SANDBOX_FAULT_BUILD_FAIL
static_assert(false, "cannbuild sandbox fault build-fail:ops-math");
#endif

namespace {

struct Problem {
    standin::View self, out;
};

aclnnStatus CheckShape(const standin::View &self, const standin::View &out) {
    const size_t dims = self.shape.size();
    if (dims != 3 && dims != 4)
        return standin::Fail(ACLNN_ERR_PARAM_INVALID, "It is expected input size equals to 3 or 4, but got sizes %zu.",
                             dims);
    if (out.shape.size() != dims + 1)
        return standin::Fail(ACLNN_ERR_PARAM_INVALID,
                             "It is expected output size is 1 large than input size, but got input size %zu, "
                             "output size %zu.",
                             dims, out.shape.size());
    for (size_t i = 0; i < dims; ++i) {
        if (out.shape[i] != self.shape[i])
            return standin::Fail(ACLNN_ERR_PARAM_INVALID,
                                 "It is expected output size equals to input size at index %zu , but got input %s, "
                                 "output %s.",
                                 i, standin::ShapeText(self.shape).c_str(), standin::ShapeText(out.shape).c_str());
    }
    if (out.shape[dims] != self.shape[dims - 1])
        return standin::Fail(ACLNN_ERR_PARAM_INVALID,
                             "It is expected output size at index %zu equals to input size at index %zu, but got "
                             "input size %s, output size %s.",
                             dims, dims - 1, standin::ShapeText(self.shape).c_str(),
                             standin::ShapeText(out.shape).c_str());
    return ACLNN_SUCCESS;
}

}  // namespace

extern "C" {

aclnnStatus aclnnExpSegsumGetWorkspaceSize(const aclTensor *self, aclTensor *out, uint64_t *workspaceSize,
                                           aclOpExecutor **executor) {
    if (workspaceSize == nullptr || executor == nullptr)
        return standin::Fail(ACLNN_ERR_PARAM_NULLPTR, "The workspaceSize and executor cannot be nullptr.");
    if (self == nullptr) return standin::Fail(ACLNN_ERR_PARAM_NULLPTR, "The self cannot be nullptr.");
    if (out == nullptr) return standin::Fail(ACLNN_ERR_PARAM_NULLPTR, "The out cannot be nullptr.");
    aclnnStatus st = standin::CheckKernelForDevice("segsum", "Segsum",
                                                   reinterpret_cast<void *>(&aclnnExpSegsumGetWorkspaceSize));
    if (st != ACLNN_SUCCESS) return st;
    Problem p;
    if ((st = standin::Describe(self, "self", &p.self)) || (st = standin::Describe(out, "out", &p.out))) return st;
    if (p.self.Elements() == 0) {
        *workspaceSize = 0;
        *executor = aclemuCreateExecutor([](void *, void *, uint64_t) -> aclnnStatus { return ACLNN_SUCCESS; },
                                         nullptr, nullptr);
        return *executor != nullptr ? ACLNN_SUCCESS
                                    : standin::Fail(ACLNN_ERR_INNER_CREATE_EXECUTOR, "failed to create the executor.");
    }
    if (!standin::FloatingDtype(p.self.dtype))
        return standin::Fail(ACLNN_ERR_PARAM_INVALID,
                             "Tensor self not implemented for %s, should be in dtype support list "
                             "[DT_FLOAT16,DT_FLOAT,DT_BF16,].",
                             standin::DtypeName(p.self.dtype));
    if (p.out.dtype != p.self.dtype)
        return standin::Fail(ACLNN_ERR_PARAM_INVALID, "Expected dtype of self to be equal to %s but got %s.",
                             standin::DtypeName(p.out.dtype), standin::DtypeName(p.self.dtype));
    if ((st = CheckShape(p.self, p.out))) return st;
    if (p.self.format != p.out.format)
        return standin::Fail(ACLNN_ERR_PARAM_INVALID, "Format of input and output should be equal.");
    if (p.self.format != ACL_FORMAT_ND)
        return standin::Fail(ACLNN_ERR_PARAM_INVALID, "Input format should be ND.");
    if (!standin::OnDevice(p.self) || !standin::OnDevice(p.out))
        return standin::Fail(ACLNN_ERR_PARAM_INVALID,
                             "The self or out data is not device memory (allocate it with aclrtMalloc).");
    *workspaceSize = 0;
    auto *ctx = new Problem(p);
    *executor = aclemuCreateExecutor(
        [](void *c, void *, uint64_t) -> aclnnStatus {
            const auto *prob = static_cast<Problem *>(c);
            segsum::Forward(prob->self, prob->out);
            return ACLNN_SUCCESS;
        },
        [](void *c) { delete static_cast<Problem *>(c); }, ctx);
    if (*executor == nullptr) {
        delete ctx;
        return standin::Fail(ACLNN_ERR_INNER_CREATE_EXECUTOR, "failed to create the executor.");
    }
    standin::DescribeKernel(*executor, "aclnnExpSegsum", "Segsum", p.self, p.out);
    return ACLNN_SUCCESS;
}

aclnnStatus aclnnExpSegsum(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor, aclrtStream stream) {
    return aclemuLaunch(executor, workspace, workspaceSize, stream);
}

}  // extern "C"
