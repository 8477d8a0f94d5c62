// cannbuild sandbox stand-in: aclnnSwiGlu, checked as docs/aclnnSwiGlu.md says the real
// one is (x or out null -> 161001; a dtype outside BFLOAT16/FLOAT16/FLOAT32, out's dtype
// not x's, dim outside [-x.dim(), x.dim()-1], an odd size along dim, out not x's shape
// with that size halved -> 161002; an empty x runs nothing), then run by the CPU kernel.
// Kernels for ascend910b and ascend910_93 (swi_glu_def.cpp:35-36).

#include "aclnn_swi_glu.h"

#include "../../op_kernel/swi_glu_cpu.h"

#ifdef SANDBOX_FAULT_BUILD_FAIL
static_assert(false, "cannbuild sandbox fault build-fail:ops-nn");
#endif

namespace {

struct Problem {
    standin::View x, out;
    int64_t dim;
};

}  // namespace

extern "C" {

aclnnStatus aclnnSwiGluGetWorkspaceSize(const aclTensor *x, int64_t dim, const aclTensor *out,
                                        uint64_t *workspaceSize, aclOpExecutor **executor) {
    if (workspaceSize == nullptr || executor == nullptr)
        return standin::Fail(ACLNN_ERR_PARAM_NULLPTR, "The workspaceSize and executor cannot be nullptr.");
    if (x == nullptr) return standin::Fail(ACLNN_ERR_PARAM_NULLPTR, "The x cannot be nullptr.");
    if (out == nullptr) return standin::Fail(ACLNN_ERR_PARAM_NULLPTR, "The out cannot be nullptr.");
    aclnnStatus st = standin::CheckKernelForDevice("swi_glu", "SwiGlu",
                                                   reinterpret_cast<void *>(&aclnnSwiGluGetWorkspaceSize));
    if (st != ACLNN_SUCCESS) return st;
    Problem p;
    if ((st = standin::Describe(x, "x", &p.x)) || (st = standin::Describe(out, "out", &p.out))) return st;
    const int64_t rank = static_cast<int64_t>(p.x.shape.size());
    if (rank == 0) return standin::Fail(ACLNN_ERR_PARAM_INVALID, "The x must have at least one dimension.");
    if (!standin::FloatingDtype(p.x.dtype))
        return standin::Fail(ACLNN_ERR_PARAM_INVALID,
                             "Tensor x not implemented for %s, should be in dtype support list "
                             "[DT_FLOAT16,DT_FLOAT,DT_BF16,].",
                             standin::DtypeName(p.x.dtype));
    if (p.out.dtype != p.x.dtype)
        return standin::Fail(ACLNN_ERR_PARAM_INVALID, "Expected dtype of out to be equal to %s but got %s.",
                             standin::DtypeName(p.x.dtype), standin::DtypeName(p.out.dtype));
    if (dim < -rank || dim >= rank)
        return standin::Fail(ACLNN_ERR_PARAM_INVALID, "dim %ld is out of range [%ld, %ld].", static_cast<long>(dim),
                             static_cast<long>(-rank), static_cast<long>(rank - 1));
    p.dim = dim < 0 ? dim + rank : dim;
    if (p.x.shape[p.dim] % 2 != 0)
        return standin::Fail(ACLNN_ERR_PARAM_INVALID, "The x size %ld along dim %ld must be even.",
                             static_cast<long>(p.x.shape[p.dim]), static_cast<long>(dim));
    std::vector<int64_t> want = p.x.shape;
    want[p.dim] /= 2;
    if (p.out.shape != want)
        return standin::Fail(ACLNN_ERR_PARAM_INVALID, "The out shape %s must be %s (x %s halved along dim %ld).",
                             standin::ShapeText(p.out.shape).c_str(), standin::ShapeText(want).c_str(),
                             standin::ShapeText(p.x.shape).c_str(), static_cast<long>(dim));
    if (!standin::OnDevice(p.x) || !standin::OnDevice(p.out))
        return standin::Fail(ACLNN_ERR_PARAM_INVALID,
                             "The x or out data is not device memory (allocate it with aclrtMalloc).");
    *workspaceSize = 0;
    auto *ctx = new Problem(p);
    *executor = aclemuCreateExecutor(
        [](void *c, void *, uint64_t) -> aclnnStatus {
            const auto *prob = static_cast<Problem *>(c);
            swi_glu::Forward(prob->x, prob->dim, prob->out);
            return ACLNN_SUCCESS;
        },
        [](void *c) { delete static_cast<Problem *>(c); }, ctx);
    if (*executor == nullptr) {
        delete ctx;
        return standin::Fail(ACLNN_ERR_INNER_CREATE_EXECUTOR, "failed to create the executor.");
    }
    standin::DescribeKernel(*executor, "aclnnSwiGlu", "SwiGlu", p.x, p.out);
    return ACLNN_SUCCESS;
}

aclnnStatus aclnnSwiGlu(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor, aclrtStream stream) {
    return aclemuLaunch(executor, workspace, workspaceSize, stream);
}

}  // extern "C"
