// cannbuild sandbox stand-in: the checks the FlashAttentionScore APIs share, as the
// real op_api makes them (null pointers -> 161001, bad shapes/dtypes/layouts -> 161002,
// with a message for aclGetRecentErrMsg), and the executor that runs the CPU kernel.
//
// Limits of the stand-in, reported as 161002 rather than silently ignored:
// no pse (realShift), no dropout (keepProb must be 1), sparse modes 0-4 only.
//
// Like a real package, it only runs on SoCs it carries kernels for: the
// package's op_impl/ai_core/tbe/kernel/<soc>/ must match the device's SoC.
// Each executor tells the emulated runtime's profiler what its kernel is (the
// name, type, core type and tensors a real profiler shows for FlashAttentionScore).

#include "flash_attention_score_checks.h"

#include <dlfcn.h>
#include <sys/stat.h>

#include <cctype>
#include <cstdarg>
#include <cstdio>

#include "emu/emu_runtime.h"
#include "op_common/op_host/util/opbase_export.h"
#include "securec.h"

#ifndef FA_HEAD_DIM_MAX
#define FA_HEAD_DIM_MAX 768  // the limit docs/aclnnFlashAttentionScoreV2.md states for this release
#endif

namespace fa_api {
namespace {

constexpr uint64_t kWorkspaceBytes = 16 * 1024;  // tiling data, as a real op reserves

aclnnStatus Describe(const aclTensor *t, const char *name, Tensor *out) {
    int64_t *dims = nullptr, *strides = nullptr;
    uint64_t ndims = 0, nstrides = 0;
    void *addr = nullptr;
    if (aclGetViewShape(t, &dims, &ndims) != 0 || aclGetViewStrides(t, &strides, &nstrides) != 0 ||
        aclGetViewOffset(t, &out->offset) != 0 || aclGetDataType(t, &out->dtype) != 0 ||
        aclGetFormat(t, &out->format) != 0 || aclGetRawTensorAddr(t, &addr) != 0) {
        delete[] dims;
        delete[] strides;
        return Fail(ACLNN_ERR_PARAM_INVALID, "The %s is not a valid aclTensor.", name);
    }
    out->shape.assign(dims, dims + ndims);
    out->strides.assign(strides, strides + nstrides);
    out->data = static_cast<char *>(addr);
    delete[] dims;
    delete[] strides;
    return ACLNN_SUCCESS;
}

// The op::ToString names of the aclFormat tags the checks report.
std::string FormatName(aclFormat format) {
    switch (format) {
        case ACL_FORMAT_ND: return "ND";
        case ACL_FORMAT_NCHW: return "NCHW";
        case ACL_FORMAT_NHWC: return "NHWC";
        case ACL_FORMAT_NCL: return "NCL";
        case ACL_FORMAT_NCDHW: return "NCDHW";
        case ACL_FORMAT_FRACTAL_NZ: return "FRACTAL_NZ";
        default: return "format " + std::to_string(static_cast<int>(format));
    }
}

// The profiler's dtype names (GE's: DT_BF16 keeps its prefix).
std::string DtypeName(aclDataType dtype) {
    switch (dtype) {
        case ACL_FLOAT16: return "FLOAT16";
        case ACL_BF16: return "DT_BF16";
        case ACL_FLOAT: return "FLOAT";
        case ACL_UINT8: return "UINT8";
        case ACL_BOOL: return "BOOL";
        default: return "DT_UNDEFINED";
    }
}

std::string DimList(const std::vector<int64_t> &shape) {
    std::string s;
    for (size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + std::to_string(shape[i]);
    return s;
}

// The build.sh --soc family of a runtime SoC name (exact names, as CANN does).
std::string SocFamily(const std::string &soc) {
    if (soc.rfind("Ascend910_93", 0) == 0) return "ascend910_93";
    if (soc.rfind("Ascend910B", 0) == 0 && soc.size() > 10 && std::isdigit(static_cast<unsigned char>(soc[10])))
        return "ascend910b";
    if (soc.rfind("Ascend950", 0) == 0) return "ascend950";
    if (soc.rfind("Ascend310P", 0) == 0) return "ascend310p";
    if (soc.rfind("Ascend910", 0) == 0) return "ascend910";
    return "";
}

// A package built for another SoC has no kernel for this device.
aclnnStatus CheckKernelForDevice() {
    const char *soc = aclrtGetSocName();
    if (soc == nullptr) return ACLNN_SUCCESS;
    std::string family = SocFamily(soc);
    Dl_info info;
    if (family.empty() || dladdr(reinterpret_cast<void *>(&CheckKernelForDevice), &info) == 0) return ACLNN_SUCCESS;
    std::string lib = info.dli_fname;
    std::string vendor = lib.substr(0, lib.rfind('/')) + "/../..";
    std::string kernels = vendor + "/op_impl/ai_core/tbe/kernel/";
    struct stat st;
    if (stat(kernels.c_str(), &st) != 0) return ACLNN_SUCCESS;  // not an installed package
    std::string want = kernels + family + "/flash_attention_score";
    if (stat(want.c_str(), &st) == 0) return ACLNN_SUCCESS;
    char msg[700];
    std::snprintf(msg, sizeof(msg),
                  "EZ9999: Inner Error! Cannot find the kernel of FlashAttentionScore for soc %s (%s) in %s; the "
                  "package was built for another SoC (build it with --soc=%s).",
                  soc, family.c_str(), kernels.c_str(), family.c_str());
    aclemuSetRecentErrMsg(msg);
    return ACLNN_ERR_INNER_FIND_KERNEL_ERROR;
}

// Whether the tensor's elements lie in memory aclrtMalloc handed out.
bool OnDevice(const Tensor &t) {
    if (t.Elements() == 0) return true;
    int64_t last = t.offset;
    for (size_t i = 0; i < t.shape.size(); ++i) last += (t.shape[i] - 1) * t.strides[i];
    size_t elem = aclDataTypeSize(t.dtype);
    return t.data != nullptr &&
           aclemuIsDeviceRange(t.data + t.offset * static_cast<int64_t>(elem), (last - t.offset + 1) * elem) == 1;
}

}  // namespace

int64_t Tensor::Elements() const { return op_util::ShapeSize(shape.data(), shape.size()); }

char *Tensor::First() const { return data + offset * static_cast<int64_t>(aclDataTypeSize(dtype)); }

aclnnStatus Fail(aclnnStatus code, const char *fmt, ...) {
    char body[512];
    (void)memset_s(body, sizeof(body), 0, sizeof(body));  // libc_sec, as the real op_api links it
    va_list args;
    va_start(args, fmt);
    std::vsnprintf(body, sizeof(body), fmt, args);
    va_end(args);
    char msg[600];
    std::snprintf(msg, sizeof(msg), "AclNN_Parameter_Error(EZ1001): %s", body);
    aclemuSetRecentErrMsg(msg);
    return code;
}

std::string ShapeText(const std::vector<int64_t> &shape) { return "[" + DimList(shape) + "]"; }

aclnnStatus CheckArguments(const Request &r, uint64_t *workspaceSize, aclOpExecutor **executor) {
    struct Required {
        const void *ptr;
        const char *name;
    } required[] = {{r.query, "query"},           {r.key, "key"},
                    {r.value, "value"},           {r.inputLayout, "inputLayout"},
                    {r.softmaxMax, "softmaxMax"}, {r.softmaxSum, "softmaxSum"},
                    {r.attentionOut, "attentionOut"}, {workspaceSize, "workspaceSize"},
                    {executor, "executor"}};
    for (const auto &req : required)
        if (req.ptr == nullptr) return Fail(ACLNN_ERR_PARAM_NULLPTR, "The %s cannot be nullptr.", req.name);
    aclnnStatus kernel_status = CheckKernelForDevice();
    if (kernel_status != ACLNN_SUCCESS) return kernel_status;

    if (r.realShift != nullptr)
        return Fail(ACLNN_ERR_PARAM_INVALID, "realShiftOptional (pse) is not supported by the cannbuild sandbox.");
    if (r.pseType != 1 && r.pseType != 0)
        return Fail(ACLNN_ERR_PARAM_INVALID, "pseType %ld is not supported by the cannbuild sandbox.",
                    static_cast<long>(r.pseType));
    if (!(r.keepProb > 0.0 && r.keepProb <= 1.0))
        return Fail(ACLNN_ERR_PARAM_INVALID, "keepProb %f must be in (0, 1].", r.keepProb);
    if (r.keepProb != 1.0 || r.dropMask != nullptr)
        return Fail(ACLNN_ERR_PARAM_INVALID, "dropout (keepProb < 1) is not supported by the cannbuild sandbox.");
    if (r.sparseMode < 0 || r.sparseMode > 4)
        return Fail(ACLNN_ERR_PARAM_INVALID, "sparseMode %ld is not supported by the cannbuild sandbox (0-4).",
                    static_cast<long>(r.sparseMode));
    if (r.innerPrecise < 0 || r.innerPrecise > 2)
        return Fail(ACLNN_ERR_PARAM_INVALID, "innerPrecise %ld is invalid.", static_cast<long>(r.innerPrecise));
    if (r.headNum <= 0)
        return Fail(ACLNN_ERR_PARAM_INVALID, "headNum %ld must be greater than 0.", static_cast<long>(r.headNum));
    return ACLNN_SUCCESS;
}

aclnnStatus DescribeTensors(const Request &r, Tensors *t) {
    aclnnStatus st;
    if ((st = Describe(r.query, "query", &t->q)) || (st = Describe(r.key, "key", &t->k)) ||
        (st = Describe(r.value, "value", &t->v)) || (st = Describe(r.softmaxMax, "softmaxMax", &t->smax)) ||
        (st = Describe(r.softmaxSum, "softmaxSum", &t->ssum)) ||
        (st = Describe(r.attentionOut, "attentionOut", &t->out)))
        return st;
    if (r.attenMask != nullptr && (st = Describe(r.attenMask, "attenMask", &t->mask))) return st;

    // Like the real op_api, any plain format tag is accepted (torch_npu tags tensors by rank: 3-D NCL,
    // 4-D NCHW, else ND); only the private FRACTAL_NZ layout is rejected.
    const Tensor *io[] = {&t->q, &t->k, &t->v, &t->smax, &t->ssum, &t->out};
    for (const Tensor *x : io)
        if (x->format == ACL_FORMAT_FRACTAL_NZ)
            return Fail(ACLNN_ERR_PARAM_INVALID,
                        "Input and output format only support [ND]. Actual: query:[%s], key:[%s], value:[%s], "
                        "softmaxMaxOut:[%s], softmaxSumOut:[%s], attentionOutOut:[%s].",
                        FormatName(t->q.format).c_str(), FormatName(t->k.format).c_str(),
                        FormatName(t->v.format).c_str(), FormatName(t->smax.format).c_str(),
                        FormatName(t->ssum.format).c_str(), FormatName(t->out.format).c_str());
    if (r.attenMask != nullptr && t->mask.format == ACL_FORMAT_FRACTAL_NZ)
        return Fail(ACLNN_ERR_PARAM_INVALID, "Optional input format only support [ND]. Actual: attenMaskOptional:[%s].",
                    FormatName(t->mask.format).c_str());
#ifdef SANDBOX_FAULT_NO_FP32
    // the fa-no-fp32 fault: a package whose operator supports FLOAT16 and BFLOAT16 only, as the
    // FlashAttentionScore of CANN 7.0 did (its op_impl config lists no float either)
    if (t->q.dtype != ACL_FLOAT16 && t->q.dtype != ACL_BF16)
        return Fail(ACLNN_ERR_PARAM_INVALID, "The query dtype %d is not supported, expected FLOAT16 or BFLOAT16.",
                    static_cast<int>(t->q.dtype));
#endif
    if (t->q.dtype != ACL_FLOAT && t->q.dtype != ACL_FLOAT16 && t->q.dtype != ACL_BF16)
        return Fail(ACLNN_ERR_PARAM_INVALID, "The query dtype %d is not supported, expected FLOAT, FLOAT16 or BFLOAT16.",
                    static_cast<int>(t->q.dtype));
    if (t->k.dtype != t->q.dtype || t->v.dtype != t->q.dtype)
        return Fail(ACLNN_ERR_PARAM_INVALID, "query, key and value must have the same dtype.");
    if (t->out.dtype != t->q.dtype)
        return Fail(ACLNN_ERR_PARAM_INVALID, "The attentionOut dtype must equal the query dtype.");
    const Tensor *stats[] = {&t->smax, &t->ssum};
    const char *stat_names[] = {"softmaxMax", "softmaxSum"};
    for (int i = 0; i < 2; ++i)
        if (stats[i]->dtype != ACL_FLOAT)
            return Fail(ACLNN_ERR_PARAM_INVALID, "The %s must be FLOAT, got dtype %d.", stat_names[i],
                        static_cast<int>(stats[i]->dtype));
    if (r.attenMask != nullptr && t->mask.dtype != ACL_BOOL && t->mask.dtype != ACL_UINT8)
        return Fail(ACLNN_ERR_PARAM_INVALID, "The attenMask dtype must be BOOL or UINT8.");
    return ACLNN_SUCCESS;
}

aclnnStatus CheckHeads(int64_t n1, int64_t n2, int64_t dq, int64_t dk, int64_t dv) {
    if (dq != dk)
        return Fail(ACLNN_ERR_PARAM_INVALID, "The query head dim %ld must equal the key head dim %ld.",
                    static_cast<long>(dq), static_cast<long>(dk));
    if (dv > dk)
        return Fail(ACLNN_ERR_PARAM_INVALID, "The value head dim %ld must not exceed the key head dim %ld.",
                    static_cast<long>(dv), static_cast<long>(dk));
    if (dq > FA_HEAD_DIM_MAX || n1 > 256)
        return Fail(ACLNN_ERR_PARAM_INVALID, "D %ld must be <= %d and N %ld <= 256.", static_cast<long>(dq),
                    FA_HEAD_DIM_MAX, static_cast<long>(n1));
    if (n2 <= 0 || n1 % n2 != 0)
        return Fail(ACLNN_ERR_PARAM_INVALID, "n1Size %ld must be a multiple of n2Size %ld.", static_cast<long>(n1),
                    static_cast<long>(n2));
    return ACLNN_SUCCESS;
}

aclnnStatus CheckOnDevice(const Request &r, const Tensors &t) {
    if (r.attenMask != nullptr && !OnDevice(t.mask))
        return Fail(ACLNN_ERR_PARAM_INVALID, "The attenMask data is not device memory.");
    const Tensor *all[] = {&t.q, &t.k, &t.v, &t.out, &t.smax, &t.ssum};
    const char *all_names[] = {"query", "key", "value", "attentionOut", "softmaxMax", "softmaxSum"};
    for (int i = 0; i < 6; ++i)
        if (!OnDevice(*all[i]))
            return Fail(ACLNN_ERR_PARAM_INVALID,
                        "The %s data is not device memory (allocate it with aclrtMalloc and copy with aclrtMemcpy).",
                        all_names[i]);
    return ACLNN_SUCCESS;
}

fa::HeadView TndView(const Tensor &t) {
    fa::HeadView view;
    view.data = t.First();
    view.ss = t.strides[0];
    view.sn = t.strides[1];
    view.sd = t.strides[2];
    return view;
}

aclnnStatus MakeExecutor(const Request &r, const Tensors &t, const fa::Problem &p, int64_t seq_count,
                         uint64_t *workspaceSize, aclOpExecutor **executor) {
    bool empty = t.out.Elements() == 0 && t.smax.Elements() == 0 && t.ssum.Elements() == 0;
    *workspaceSize = empty ? 0 : kWorkspaceBytes;
    auto *ctx = new fa::Problem(p);
    *executor = aclemuCreateExecutor(
        [](void *c, void *, uint64_t) -> aclnnStatus {
            const auto *prob = static_cast<fa::Problem *>(c);
            if (prob->B * prob->N1 * prob->S1 > 0) fa::Forward(*prob);
            return ACLNN_SUCCESS;
        },
        [](void *c) { delete static_cast<fa::Problem *>(c); }, ctx);
    if (*executor == nullptr) {
        delete ctx;
        return Fail(ACLNN_ERR_INNER_CREATE_EXECUTOR, "failed to create the executor.");
    }
    // the 12 input slots and 4 outputs a real profiler row of FlashAttentionScore shows: q, k, v,
    // pse, dropMask, paddingMask, attenMask, prefix, actualSeqQLen, actualSeqKvLen, qStartIdx,
    // kvStartIdx
    const std::string qd = DtypeName(t.q.dtype);
    const std::string mask_shape = r.attenMask != nullptr ? DimList(t.mask.shape) : "";
    const std::string mask_dtype = r.attenMask != nullptr ? DtypeName(t.mask.dtype) : "BOOL";
    const std::string seq = seq_count > 0 ? std::to_string(seq_count) : "";
    const std::string in_shapes = DimList(t.q.shape) + ";" + DimList(t.k.shape) + ";" + DimList(t.v.shape) +
                                  ";;;;" + mask_shape + ";;" + seq + ";" + seq + ";;";
    const std::string in_dtypes = qd + ";" + qd + ";" + qd + ";" + qd + ";UINT8;" + qd + ";" + mask_dtype +
                                  ";INT64;INT64;INT64;INT64;INT64";
    const std::string f = FormatName(t.q.format);
    const std::string in_formats = f + ";" + f + ";" + f + ";ND;ND;ND;ND;ND;ND;ND;ND;ND";
    const std::string out_shapes =
        DimList(t.smax.shape) + ";" + DimList(t.ssum.shape) + ";;" + DimList(t.out.shape);
    const std::string out_dtypes = "FLOAT;FLOAT;" + qd + ";" + qd;
    const std::string name = std::string(r.api) + "_FlashAttentionScore_FlashAttentionScore";
    aclemuKernelDesc desc = {name.c_str(),       "FlashAttentionScore", "MIX_AIC",          0, 0,
                             in_shapes.c_str(),  in_dtypes.c_str(),     in_formats.c_str(), out_shapes.c_str(),
                             out_dtypes.c_str(), "ND;ND;ND;ND"};
    aclemuSetExecutorKernel(*executor, r.api, &desc);
    return ACLNN_SUCCESS;
}

}  // namespace fa_api
