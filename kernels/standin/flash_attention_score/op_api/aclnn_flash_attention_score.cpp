// cannbuild sandbox stand-in: aclnnFlashAttentionScore / V2, checked like the
// real op_api (null pointers -> 161001, bad shapes/dtypes/layouts -> 161002,
// with a message for aclGetRecentErrMsg) and run by the CPU kernel.
//
// Limits of the stand-in, reported as 161002 rather than silently ignored:
// no pse (realShift), no dropout (keepProb must be 1), sparse modes 0-4 only.
//
// Like a real package, it only runs on SoCs it carries kernels for: the
// package's op_impl/ai_core/tbe/kernel/<soc>/ must match the device's SoC.
// Each executor tells the emulated runtime's profiler what its kernel is (the
// name, type, core type and tensors a real profiler shows for FlashAttentionScore).

#include "aclnn_flash_attention_score.h"

#include <dlfcn.h>
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cstdarg>
#include <cstdio>
#include <string>
#include <vector>

#include "opdev/op_errno.h"
#include "emu/emu_runtime.h"
#include "flash_attention_score_cpu.h"
#include "op_common/op_host/util/opbase_export.h"
#include "securec.h"

#ifdef SANDBOX_FAULT_BUILD_FAIL
static_assert(false, "cannbuild sandbox fault build-fail:ops-transformer");
#endif

#ifndef FA_HEAD_DIM_MAX
#define FA_HEAD_DIM_MAX 768  // the limit docs/aclnnFlashAttentionScoreV2.md states for this release
#endif

namespace {

constexpr uint64_t kWorkspaceBytes = 16 * 1024;  // tiling data, as a real op reserves

struct Tensor {
    std::vector<int64_t> shape;
    std::vector<int64_t> strides;
    int64_t offset = 0;
    aclDataType dtype = ACL_DT_UNDEFINED;
    aclFormat format = ACL_FORMAT_UNDEFINED;
    char *data = nullptr;

    int64_t Elements() const { return op_util::ShapeSize(shape.data(), shape.size()); }
};

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

std::string ShapeText(const std::vector<int64_t> &shape) {
    std::string s = "[";
    for (size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + std::to_string(shape[i]);
    return s + "]";
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

struct Dims {
    int64_t B, N, S, D;
};

// Map a layout to (B, N, S, D) sizes and (b, n, s, d) element strides.
aclnnStatus Analyse(const std::string &layout, const Tensor &t, const char *name, int64_t head_dim_or_heads,
                    bool heads_given, Dims *dims, fa::HeadView *view) {
    const auto &sh = t.shape;
    const auto &st = t.strides;
    view->data = t.data;
    if (layout == "BSH" || layout == "SBH") {
        bool bsh = layout == "BSH";
        int64_t H = sh[2];
        int64_t D = heads_given ? H / head_dim_or_heads : head_dim_or_heads;
        if (heads_given && (head_dim_or_heads <= 0 || H % head_dim_or_heads != 0))
            return Fail(ACLNN_ERR_PARAM_INVALID, "The %s hidden size %ld is not a multiple of headNum %ld.", name,
                        static_cast<long>(H), static_cast<long>(head_dim_or_heads));
        if (!heads_given && (D <= 0 || H % D != 0))
            return Fail(ACLNN_ERR_PARAM_INVALID, "The %s hidden size %ld is not a multiple of the head dim %ld.",
                        name, static_cast<long>(H), static_cast<long>(D));
        dims->B = bsh ? sh[0] : sh[1];
        dims->S = bsh ? sh[1] : sh[0];
        dims->D = D;
        dims->N = H / D;
        view->sb = bsh ? st[0] : st[1];
        view->ss = bsh ? st[1] : st[0];
        view->sd = st[2];
        view->sn = D * st[2];
    } else if (layout == "BSND") {
        *dims = {sh[0], sh[2], sh[1], sh[3]};
        view->sb = st[0];
        view->ss = st[1];
        view->sn = st[2];
        view->sd = st[3];
    } else {  // BNSD
        *dims = {sh[0], sh[1], sh[2], sh[3]};
        view->sb = st[0];
        view->sn = st[1];
        view->ss = st[2];
        view->sd = st[3];
    }
    view->data = t.data + t.offset * static_cast<int64_t>(aclDataTypeSize(t.dtype));
    return ACLNN_SUCCESS;
}

struct Request {
    const char *api;
    const aclTensor *query, *key, *value, *realShift, *dropMask, *attenMask;
    const aclTensor *softmaxMax, *softmaxSum, *attentionOut;
    double scale, keepProb;
    int64_t preTokens, nextTokens, headNum, innerPrecise, sparseMode, pseType;
    char *inputLayout;
};

aclnnStatus Prepare(const Request &r, uint64_t *workspaceSize, aclOpExecutor **executor) {
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

    std::string layout = r.inputLayout;
    std::transform(layout.begin(), layout.end(), layout.begin(), [](unsigned char c) { return std::toupper(c); });
    if (layout == "TND")
        return Fail(ACLNN_ERR_PARAM_INVALID, "inputLayout TND is only supported by the VarLen APIs.");
    if (layout != "BSH" && layout != "SBH" && layout != "BSND" && layout != "BNSD")
        return Fail(ACLNN_ERR_PARAM_INVALID, "inputLayout %s is invalid, it should be BSH, SBH, BSND or BNSD.",
                    r.inputLayout);
    const size_t rank = layout.size();

    Tensor q, k, v, mask, smax, ssum, out;
    aclnnStatus st;
    if ((st = Describe(r.query, "query", &q)) || (st = Describe(r.key, "key", &k)) ||
        (st = Describe(r.value, "value", &v)) || (st = Describe(r.softmaxMax, "softmaxMax", &smax)) ||
        (st = Describe(r.softmaxSum, "softmaxSum", &ssum)) || (st = Describe(r.attentionOut, "attentionOut", &out)))
        return st;
    if (r.attenMask != nullptr && (st = Describe(r.attenMask, "attenMask", &mask))) return st;

    // Like the real op_api, any plain format tag is accepted (torch_npu tags tensors by rank: 3-D NCL,
    // 4-D NCHW, else ND); only the private FRACTAL_NZ layout is rejected.
    if (q.format == ACL_FORMAT_FRACTAL_NZ || k.format == ACL_FORMAT_FRACTAL_NZ || v.format == ACL_FORMAT_FRACTAL_NZ ||
        smax.format == ACL_FORMAT_FRACTAL_NZ || ssum.format == ACL_FORMAT_FRACTAL_NZ ||
        out.format == ACL_FORMAT_FRACTAL_NZ)
        return Fail(ACLNN_ERR_PARAM_INVALID,
                    "Input and output format only support [ND]. Actual: query:[%s], key:[%s], value:[%s], "
                    "softmaxMaxOut:[%s], softmaxSumOut:[%s], attentionOutOut:[%s].",
                    FormatName(q.format).c_str(), FormatName(k.format).c_str(), FormatName(v.format).c_str(), FormatName(smax.format).c_str(),
                    FormatName(ssum.format).c_str(), FormatName(out.format).c_str());
    if (r.attenMask != nullptr && mask.format == ACL_FORMAT_FRACTAL_NZ)
        return Fail(ACLNN_ERR_PARAM_INVALID, "Optional input format only support [ND]. Actual: attenMaskOptional:[%s].",
                    FormatName(mask.format).c_str());
    const Tensor *inputs[] = {&q, &k, &v};
    const char *names[] = {"query", "key", "value"};
    for (int i = 0; i < 3; ++i) {
        if (inputs[i]->shape.size() != rank)
            return Fail(ACLNN_ERR_PARAM_INVALID, "The %s dim num %zu does not match inputLayout %s.", names[i],
                        inputs[i]->shape.size(), layout.c_str());
    }
#ifdef SANDBOX_FAULT_NO_FP32
    // the fa-no-fp32 fault: a package whose operator supports FLOAT16 and BFLOAT16 only, as the
    // FlashAttentionScore of CANN 7.0 did (its op_impl config lists no float either)
    if (q.dtype != ACL_FLOAT16 && q.dtype != ACL_BF16)
        return Fail(ACLNN_ERR_PARAM_INVALID, "The query dtype %d is not supported, expected FLOAT16 or BFLOAT16.",
                    static_cast<int>(q.dtype));
#endif
    if (q.dtype != ACL_FLOAT && q.dtype != ACL_FLOAT16 && q.dtype != ACL_BF16)
        return Fail(ACLNN_ERR_PARAM_INVALID, "The query dtype %d is not supported, expected FLOAT, FLOAT16 or BFLOAT16.",
                    static_cast<int>(q.dtype));
    if (k.dtype != q.dtype || v.dtype != q.dtype)
        return Fail(ACLNN_ERR_PARAM_INVALID, "query, key and value must have the same dtype.");

    Dims dq, dk, dv;
    fa::Problem p;
    if ((st = Analyse(layout, q, "query", r.headNum, true, &dq, &p.q))) return st;
    if (layout == "BSND" || layout == "BNSD") {
        if (dq.N != r.headNum)
            return Fail(ACLNN_ERR_PARAM_INVALID, "headNum %ld does not match the query N axis %ld.",
                        static_cast<long>(r.headNum), static_cast<long>(dq.N));
    }
    if ((st = Analyse(layout, k, "key", dq.D, false, &dk, &p.k))) return st;
    if (layout == "BSH" || layout == "SBH") {
        // value's head dim follows from key's head count
        int64_t hv = v.shape[2];
        if (dk.N <= 0 || hv % dk.N != 0)
            return Fail(ACLNN_ERR_PARAM_INVALID, "The value hidden size %ld is not a multiple of the key head num %ld.",
                        static_cast<long>(hv), static_cast<long>(dk.N));
        if ((st = Analyse(layout, v, "value", hv / dk.N, false, &dv, &p.v))) return st;
    } else if ((st = Analyse(layout, v, "value", 0, false, &dv, &p.v))) {
        return st;
    }
    if (dq.B != dk.B || dq.B != dv.B)
        return Fail(ACLNN_ERR_PARAM_INVALID, "query, key and value must have the same batch size.");
    if (dk.S != dv.S || dk.N != dv.N)
        return Fail(ACLNN_ERR_PARAM_INVALID, "key and value must have the same shape except the head dim.");
    if (dq.D != dk.D)
        return Fail(ACLNN_ERR_PARAM_INVALID, "The query head dim %ld must equal the key head dim %ld.",
                    static_cast<long>(dq.D), static_cast<long>(dk.D));
    if (dv.D > dk.D)
        return Fail(ACLNN_ERR_PARAM_INVALID, "The value head dim %ld must not exceed the key head dim %ld.",
                    static_cast<long>(dv.D), static_cast<long>(dk.D));
    if (dq.D > FA_HEAD_DIM_MAX || dq.N > 256)
        return Fail(ACLNN_ERR_PARAM_INVALID, "D %ld must be <= %d and N %ld <= 256.", static_cast<long>(dq.D),
                    FA_HEAD_DIM_MAX, static_cast<long>(dq.N));
    if (dk.N <= 0 || dq.N % dk.N != 0)
        return Fail(ACLNN_ERR_PARAM_INVALID, "n1Size %ld must be a multiple of n2Size %ld.", static_cast<long>(dq.N),
                    static_cast<long>(dk.N));

    // outputs
    Dims dout;
    if (out.dtype != q.dtype)
        return Fail(ACLNN_ERR_PARAM_INVALID, "The attentionOut dtype must equal the query dtype.");
    if (out.shape.size() != rank ||
        (st = Analyse(layout, out, "attentionOut", dv.D, false, &dout, &p.out)) ||
        dout.B != dq.B || dout.S != dq.S || dout.N != dq.N || dout.D != dv.D)
        return Fail(ACLNN_ERR_PARAM_INVALID, "The attentionOut shape %s does not match query %s with value head dim %ld.",
                    ShapeText(out.shape).c_str(), ShapeText(q.shape).c_str(), static_cast<long>(dv.D));
    std::vector<int64_t> stat_shape = {dq.B, dq.N, dq.S, 8};
    const Tensor *stats[] = {&smax, &ssum};
    fa::HeadView *stat_views[] = {&p.smax, &p.ssum};
    const char *stat_names[] = {"softmaxMax", "softmaxSum"};
    for (int i = 0; i < 2; ++i) {
        if (stats[i]->dtype != ACL_FLOAT || stats[i]->shape != stat_shape)
            return Fail(ACLNN_ERR_PARAM_INVALID, "The %s must be FLOAT %s, got dtype %d shape %s.", stat_names[i],
                        ShapeText(stat_shape).c_str(), static_cast<int>(stats[i]->dtype),
                        ShapeText(stats[i]->shape).c_str());
        const auto &s = stats[i]->strides;
        *stat_views[i] = {stats[i]->data + stats[i]->offset * 4, s[0], s[1], s[2], s[3]};
    }

    // mask
    if (r.attenMask != nullptr) {
        if (mask.dtype != ACL_BOOL && mask.dtype != ACL_UINT8)
            return Fail(ACLNN_ERR_PARAM_INVALID, "The attenMask dtype must be BOOL or UINT8.");
        const auto &ms = mask.shape;
        const auto &mt = mask.strides;
        fa::MaskView mv;
        mv.data = reinterpret_cast<const uint8_t *>(mask.data + mask.offset);
        // accepted 4-D shapes: [B,N,S1,S2], [B,1,S1,S2], [1,1,S1,S2]
        bool full = ms.size() == 4 && ms[2] == dq.S && ms[3] == dk.S &&
                    ((ms[0] == dq.B && (ms[1] == dq.N || ms[1] == 1)) || (ms[0] == 1 && ms[1] == 1));
        if (ms.size() == 2 && ms[0] == dq.S && ms[1] == dk.S) {
            mv.s1 = mt[0];
            mv.s2 = mt[1];
        } else if (full) {
            mv.sb = ms[0] == 1 ? 0 : mt[0];
            mv.sn = ms[1] == 1 ? 0 : mt[1];
            mv.s1 = mt[2];
            mv.s2 = mt[3];
        } else if (r.sparseMode >= 2 && r.sparseMode <= 4 && ms.size() == 2) {
            // optimised causal masks (2048 x 2048) are accepted; the kernel derives the pattern
            mv.s1 = mt[0];
            mv.s2 = mt[1];
        } else {
            return Fail(ACLNN_ERR_PARAM_INVALID,
                        "The attenMask shape %s is invalid, expected [B,N,S1,S2], [B,1,S1,S2], [1,1,S1,S2] or [S1,S2] "
                        "with S1=%ld S2=%ld.",
                        ShapeText(ms).c_str(), static_cast<long>(dq.S), static_cast<long>(dk.S));
        }
        if (!OnDevice(mask)) return Fail(ACLNN_ERR_PARAM_INVALID, "The attenMask data is not device memory.");
        p.mask = mv;
    }
    const Tensor *all[] = {&q, &k, &v, &out, &smax, &ssum};
    const char *all_names[] = {"query", "key", "value", "attentionOut", "softmaxMax", "softmaxSum"};
    for (int i = 0; i < 6; ++i)
        if (!OnDevice(*all[i]))
            return Fail(ACLNN_ERR_PARAM_INVALID,
                        "The %s data is not device memory (allocate it with aclrtMalloc and copy with aclrtMemcpy).",
                        all_names[i]);

    p.dtype = q.dtype;
    p.B = dq.B;
    p.N1 = dq.N;
    p.N2 = dk.N;
    p.S1 = dq.S;
    p.S2 = dk.S;
    p.D = dq.D;
    p.Dv = dv.D;
    p.scale = r.scale;
    p.sparse_mode = r.sparseMode;
    p.pre_tokens = r.preTokens;
    p.next_tokens = r.nextTokens;

    bool empty = out.Elements() == 0 && smax.Elements() == 0 && ssum.Elements() == 0;
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
    // the 12 input slots and 4 outputs a real profiler row of FlashAttentionScore shows
    const std::string qd = DtypeName(q.dtype);
    const std::string mask_shape = r.attenMask != nullptr ? DimList(mask.shape) : "";
    const std::string mask_dtype = r.attenMask != nullptr ? DtypeName(mask.dtype) : "BOOL";
    const std::string in_shapes =
        DimList(q.shape) + ";" + DimList(k.shape) + ";" + DimList(v.shape) + ";;;;" + mask_shape + ";;;;;";
    const std::string in_dtypes = qd + ";" + qd + ";" + qd + ";" + qd + ";UINT8;" + qd + ";" + mask_dtype +
                                  ";INT64;INT64;INT64;INT64;INT64";
    const std::string f = FormatName(q.format);
    const std::string in_formats = f + ";" + f + ";" + f + ";ND;ND;ND;ND;ND;ND;ND;ND;ND";
    const std::string out_shapes = DimList(smax.shape) + ";" + DimList(ssum.shape) + ";;" + DimList(out.shape);
    const std::string out_dtypes = "FLOAT;FLOAT;" + qd + ";" + qd;
    const std::string name = std::string(r.api) + "_FlashAttentionScore_FlashAttentionScore";
    aclemuKernelDesc desc = {name.c_str(),       "FlashAttentionScore", "MIX_AIC",          0, 0,
                             in_shapes.c_str(),  in_dtypes.c_str(),     in_formats.c_str(), out_shapes.c_str(),
                             out_dtypes.c_str(), "ND;ND;ND;ND"};
    aclemuSetExecutorKernel(*executor, r.api, &desc);
    return ACLNN_SUCCESS;
}

}  // namespace

extern "C" {

aclnnStatus aclnnFlashAttentionScoreGetWorkspaceSize(
    const aclTensor *query, const aclTensor *key, const aclTensor *value, const aclTensor *realShiftOptional,
    const aclTensor *dropMaskOptional, const aclTensor *paddingMaskOptional, const aclTensor *attenMaskOptional,
    const aclIntArray *prefixOptional, double scaleValue, double keepProb, int64_t preTokens, int64_t nextTokens,
    int64_t headNum, char *inputLayout, int64_t innerPrecise, int64_t sparseMode, const aclTensor *softmaxMaxOut,
    const aclTensor *softmaxSumOut, const aclTensor *softmaxOutOut, const aclTensor *attentionOutOut,
    uint64_t *workspaceSize, aclOpExecutor **executor) {
    (void)paddingMaskOptional;
    (void)prefixOptional;
    (void)softmaxOutOut;
    Request r{"aclnnFlashAttentionScore", query, key, value, realShiftOptional, dropMaskOptional,
              attenMaskOptional, softmaxMaxOut, softmaxSumOut, attentionOutOut, scaleValue, keepProb, preTokens,
              nextTokens, headNum, innerPrecise, sparseMode, 1, inputLayout};
    return Prepare(r, workspaceSize, executor);
}

aclnnStatus aclnnFlashAttentionScore(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                     const aclrtStream stream) {
    return aclemuLaunch(executor, workspace, workspaceSize, stream);
}

#ifndef SANDBOX_FAULT_MISSING_SYMBOL
aclnnStatus aclnnFlashAttentionScoreV2GetWorkspaceSize(
    const aclTensor *query, const aclTensor *key, const aclTensor *value, const aclTensor *realShiftOptional,
    const aclTensor *dropMaskOptional, const aclTensor *paddingMaskOptional, const aclTensor *attenMaskOptional,
    const aclIntArray *prefixOptional, const aclIntArray *qStartIdxOptional, const aclIntArray *kvStartIdxOptional,
    double scaleValue, double keepProb, int64_t preTokens, int64_t nextTokens, int64_t headNum, char *inputLayout,
    int64_t innerPrecise, int64_t sparseMode, int64_t pseType, const aclTensor *softmaxMaxOut,
    const aclTensor *softmaxSumOut, const aclTensor *softmaxOutOut, const aclTensor *attentionOutOut,
    uint64_t *workspaceSize, aclOpExecutor **executor) {
    (void)paddingMaskOptional;
    (void)prefixOptional;
    (void)qStartIdxOptional;
    (void)kvStartIdxOptional;
    (void)softmaxOutOut;
    Request r{"aclnnFlashAttentionScoreV2", query, key, value, realShiftOptional, dropMaskOptional,
              attenMaskOptional, softmaxMaxOut, softmaxSumOut, attentionOutOut, scaleValue, keepProb, preTokens,
              nextTokens, headNum, innerPrecise, sparseMode, pseType, inputLayout};
    return Prepare(r, workspaceSize, executor);
}

aclnnStatus aclnnFlashAttentionScoreV2(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                       const aclrtStream stream) {
    return aclemuLaunch(executor, workspace, workspaceSize, stream);
}
#endif  // SANDBOX_FAULT_MISSING_SYMBOL

}  // extern "C"
