/*
 * cannbuild sandbox stand-in: what the stand-in operators of ops-math, ops-nn and ops-cv
 * share in their op_api (a real repository has opdev's C++ classes and op_error_check.h
 * for this): reading an aclTensor, the EZ1001 error message aclGetRecentErrMsg returns,
 * element loads and stores in FLOAT, FLOAT16 and BFLOAT16, and the check that the
 * installed package carries a kernel for the device's SoC.  Header-only: every
 * repository ships its own copy (common/stand_in/standin_op.h).
 */
#ifndef CANNBUILD_STANDIN_OP_H_
#define CANNBUILD_STANDIN_OP_H_

#include <dlfcn.h>
#include <sys/stat.h>

#include <cctype>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "aclnn/aclnn_base.h"
#include "aclnn/opdev/op_errno.h"
#include "emu/emu_runtime.h"
#include "emu/half.h"
#include "op_common/op_host/util/opbase_export.h"

namespace standin {

struct View {
    std::vector<int64_t> shape;
    std::vector<int64_t> strides;
    int64_t offset = 0;
    aclDataType dtype = ACL_DT_UNDEFINED;
    aclFormat format = ACL_FORMAT_UNDEFINED;
    char *data = nullptr;

    int64_t Elements() const { return op_util::ShapeSize(shape.data(), shape.size()); }
    // The element at a multi-index, as the tensor's strides and offset place it.
    char *At(const int64_t *index) const {
        int64_t at = offset;
        for (size_t i = 0; i < shape.size(); ++i) at += index[i] * strides[i];
        return data + at * static_cast<int64_t>(aclDataTypeSize(dtype));
    }
};

inline aclnnStatus Fail(aclnnStatus code, const char *fmt, ...) {
    char body[512];
    va_list args;
    va_start(args, fmt);
    std::vsnprintf(body, sizeof(body), fmt, args);
    va_end(args);
    char msg[600];
    std::snprintf(msg, sizeof(msg), "AclNN_Parameter_Error(EZ1001): %s", body);
    aclemuSetRecentErrMsg(msg);
    return code;
}

inline aclnnStatus Describe(const aclTensor *t, const char *name, View *out) {
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

inline std::string ShapeText(const std::vector<int64_t> &shape) {
    std::string s = "[";
    for (size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + std::to_string(shape[i]);
    return s + "]";
}

// op::ToString's names of the dtypes the stand-ins take.
inline const char *DtypeName(aclDataType dtype) {
    switch (dtype) {
        case ACL_FLOAT: return "DT_FLOAT";
        case ACL_FLOAT16: return "DT_FLOAT16";
        case ACL_BF16: return "DT_BF16";
        default: return "DT_UNDEFINED";
    }
}

inline bool FloatingDtype(aclDataType dtype) {
    return dtype == ACL_FLOAT || dtype == ACL_FLOAT16 || dtype == ACL_BF16;
}

// Every element of a (possibly strided) view lies in memory aclrtMalloc handed out.
inline bool OnDevice(const View &t) {
    if (t.Elements() == 0) return true;
    int64_t last = t.offset;
    for (size_t i = 0; i < t.shape.size(); ++i) last += (t.shape[i] - 1) * t.strides[i];
    size_t elem = aclDataTypeSize(t.dtype);
    return t.data != nullptr &&
           aclemuIsDeviceRange(t.data + t.offset * static_cast<int64_t>(elem), (last - t.offset + 1) * elem) == 1;
}

// Loads and stores compute in float, as the AscendC kernels do for FLOAT16 and BFLOAT16
// (cast to float, compute, cast back with round-to-nearest-even).
inline float Load(const char *p, aclDataType dtype) {
    uint16_t h;
    switch (dtype) {
        case ACL_FLOAT16:
            std::memcpy(&h, p, 2);
            return emu::HalfToFloat(h);
        case ACL_BF16:
            std::memcpy(&h, p, 2);
            return emu::Bf16ToFloat(h);
        default: {
            float f;
            std::memcpy(&f, p, 4);
            return f;
        }
    }
}

inline void Store(char *p, aclDataType dtype, float value) {
    uint16_t h;
    switch (dtype) {
        case ACL_FLOAT16:
            h = emu::FloatToHalf(value);
            std::memcpy(p, &h, 2);
            break;
        case ACL_BF16:
            h = emu::FloatToBf16(value);
            std::memcpy(p, &h, 2);
            break;
        default:
            std::memcpy(p, &value, 4);
    }
}

// Row-major walk of a shape: advances `index`, false after the last element.
inline bool Next(const std::vector<int64_t> &shape, std::vector<int64_t> *index) {
    for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
        if (++(*index)[d] < shape[d]) return true;
        (*index)[d] = 0;
    }
    return false;
}

// The build.sh --soc family of a runtime SoC name (exact names, as CANN does).
inline std::string SocFamily(const std::string &soc) {
    if (soc.rfind("Ascend910_93", 0) == 0) return "ascend910_93";
    if (soc.rfind("Ascend910B", 0) == 0 && soc.size() > 10 && std::isdigit(static_cast<unsigned char>(soc[10])))
        return "ascend910b";
    if (soc.rfind("Ascend950", 0) == 0) return "ascend950";
    if (soc.rfind("Ascend310P", 0) == 0) return "ascend310p";
    return "";
}

// A package built for another SoC has no kernel for this device: the installed package's
// op_impl/ai_core/tbe/kernel/<soc>/<op>/ must exist (`anchor` is any function of the
// operator's library, whose path locates the package).
inline aclnnStatus CheckKernelForDevice(const char *op, const char *op_type, void *anchor) {
    const char *soc = aclrtGetSocName();
    if (soc == nullptr) return ACLNN_SUCCESS;
    std::string family = SocFamily(soc);
    Dl_info info;
    if (family.empty() || dladdr(anchor, &info) == 0) return ACLNN_SUCCESS;
    std::string lib = info.dli_fname;
    std::string kernels = lib.substr(0, lib.rfind('/')) + "/../../op_impl/ai_core/tbe/kernel/";
    struct stat st;
    if (stat(kernels.c_str(), &st) != 0) return ACLNN_SUCCESS;  // not an installed package
    std::string want = kernels + family + "/" + op;
    if (stat(want.c_str(), &st) == 0) return ACLNN_SUCCESS;
    char msg[700];
    std::snprintf(msg, sizeof(msg),
                  "EZ9999: Inner Error! Cannot find the kernel of %s for soc %s (%s) in %s; the package was "
                  "built for another SoC (build it with --soc=%s).",
                  op_type, soc, family.c_str(), kernels.c_str(), family.c_str());
    aclemuSetRecentErrMsg(msg);
    return ACLNN_ERR_INNER_FIND_KERNEL_ERROR;
}

// The profiler's description of a one-input, one-output vector kernel.
inline void DescribeKernel(aclOpExecutor *executor, const char *api, const char *op_type, const View &in,
                           const View &out) {
    auto dims = [](const std::vector<int64_t> &shape) {
        std::string s;
        for (size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + std::to_string(shape[i]);
        return s;
    };
    const std::string name = std::string(api) + "_" + op_type + "_" + op_type;
    const std::string in_shape = dims(in.shape), out_shape = dims(out.shape);
    const std::string dtype = DtypeName(in.dtype) + 3;  // FLOAT16, FLOAT, BF16 as msprof writes them
    aclemuKernelDesc desc = {name.c_str(),  op_type,         "AI_VECTOR_CORE", 0,  0, in_shape.c_str(),
                             dtype.c_str(), "ND",            out_shape.c_str(), dtype.c_str(), "ND"};
    aclemuSetExecutorKernel(executor, api, &desc);
}

}  // namespace standin

#endif  // CANNBUILD_STANDIN_OP_H_
