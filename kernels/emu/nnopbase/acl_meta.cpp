// cannbuild sandbox: aclnn tensor/array objects and the two-phase executor.
//
// Behaviour follows the public docs: aclCreateTensor returns nullptr on bad
// dims, strides/offset are in elements, the getters allocate arrays the caller
// frees with delete[], and a non-repeatable executor is consumed by the
// second-phase call.

#include <cstdio>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "aclnn/aclnn_base.h"
#include "aclnn/opdev/op_errno.h"
#include "emu/emu_runtime.h"

struct aclTensor {
    std::vector<int64_t> view;
    std::vector<int64_t> strides;
    std::vector<int64_t> storage;
    int64_t offset = 0;
    aclDataType dtype = ACL_DT_UNDEFINED;
    aclFormat format = ACL_FORMAT_UNDEFINED;
    void *data = nullptr;
};

struct aclScalar {
    aclDataType dtype;
    unsigned char bytes[16];
};

struct aclIntArray {
    std::vector<int64_t> values;
};

struct aclFloatArray {
    std::vector<float> values;
};

struct aclBoolArray {
    std::vector<bool> values;
};

// What the profiler is told about the executor's kernel (aclemuSetExecutorKernel).
struct KernelInfo {
    std::string api, name, op_type, core;
    uint32_t block = 0, mix_block = 0;
    std::string in_shapes, in_dtypes, in_formats, out_shapes, out_dtypes, out_formats;
};

struct aclOpExecutor {
    aclemuRunFn run = nullptr;
    aclemuReleaseFn release = nullptr;
    void *ctx = nullptr;
    bool repeatable = false;
    KernelInfo *kernel = nullptr;
};

namespace {

aclnnStatus NullParam(const char *api, const char *what) {
    char msg[256];
    std::snprintf(msg, sizeof(msg), "AclNN_Parameter_Error(EZ1001): %s: %s cannot be nullptr.", api, what);
    aclemuSetRecentErrMsg(msg);
    return ACLNN_ERR_PARAM_NULLPTR;
}

int64_t *CopyOut(const std::vector<int64_t> &v) {
    int64_t *out = new (std::nothrow) int64_t[v.empty() ? 1 : v.size()];
    if (out != nullptr && !v.empty()) std::memcpy(out, v.data(), v.size() * sizeof(int64_t));
    return out;
}

void ReleaseExecutor(aclOpExecutor *executor) {
    if (executor->release != nullptr) executor->release(executor->ctx);
    delete executor->kernel;
    delete executor;
}

std::string Text(const char *s) { return s != nullptr ? s : ""; }

// Run the executor's kernel, timed by the runtime's profiler when it records.
aclnnStatus RunProfiled(aclOpExecutor *executor, void *workspace, uint64_t workspaceSize, aclrtStream stream) {
    const KernelInfo *k = executor->kernel;
    if (k == nullptr || aclemuProfiling() == 0) return executor->run(executor->ctx, workspace, workspaceSize);
    uint64_t token = aclemuKernelBegin(k->api.c_str(), stream);
    aclemuKernelRun(token);
    aclnnStatus status = executor->run(executor->ctx, workspace, workspaceSize);
    aclemuKernelDesc desc = {k->name.c_str(),      k->op_type.c_str(),    k->core.c_str(),      k->block,
                             k->mix_block,         k->in_shapes.c_str(),  k->in_dtypes.c_str(), k->in_formats.c_str(),
                             k->out_shapes.c_str(), k->out_dtypes.c_str(), k->out_formats.c_str()};
    if (status == ACLNN_SUCCESS) aclemuKernelEnd(token, &desc);
    return status;
}

}  // namespace

extern "C" {

aclnnStatus aclnnInit(const char *configPath) {
    (void)configPath;
    return ACLNN_SUCCESS;
}

aclnnStatus aclnnFinalize() { return ACLNN_SUCCESS; }

aclTensor *aclCreateTensor(const int64_t *viewDims, uint64_t viewDimsNum, aclDataType dataType,
                           const int64_t *stride, int64_t offset, aclFormat format, const int64_t *storageDims,
                           uint64_t storageDimsNum, void *tensorData) {
    if ((viewDims == nullptr && viewDimsNum > 0) || (storageDims == nullptr && storageDimsNum > 0)) {
        aclemuSetRecentErrMsg("AclNN_Parameter_Error(EZ1001): aclCreateTensor: dims cannot be nullptr.");
        return nullptr;
    }
    auto *t = new (std::nothrow) aclTensor();
    if (t == nullptr) return nullptr;
    t->view.assign(viewDims, viewDims + viewDimsNum);
    t->storage.assign(storageDims, storageDims + storageDimsNum);
    if (stride != nullptr) {
        t->strides.assign(stride, stride + viewDimsNum);
    } else {  // contiguous row-major
        t->strides.assign(viewDimsNum, 1);
        for (int64_t i = static_cast<int64_t>(viewDimsNum) - 2; i >= 0; --i) {
            t->strides[i] = t->strides[i + 1] * viewDims[i + 1];
        }
    }
    t->offset = offset;
    t->dtype = dataType;
    t->format = format;
    t->data = tensorData;
    return t;
}

aclScalar *aclCreateScalar(void *value, aclDataType dataType) {
    if (value == nullptr) return nullptr;
    auto *s = new (std::nothrow) aclScalar();
    if (s == nullptr) return nullptr;
    s->dtype = dataType;
    size_t n = aclDataTypeSize(dataType);
    std::memcpy(s->bytes, value, n > sizeof(s->bytes) ? sizeof(s->bytes) : n);
    return s;
}

aclIntArray *aclCreateIntArray(const int64_t *value, uint64_t size) {
    if (value == nullptr && size > 0) return nullptr;
    auto *a = new (std::nothrow) aclIntArray();
    if (a != nullptr) a->values.assign(value, value + size);
    return a;
}

aclFloatArray *aclCreateFloatArray(const float *value, uint64_t size) {
    if (value == nullptr && size > 0) return nullptr;
    auto *a = new (std::nothrow) aclFloatArray();
    if (a != nullptr) a->values.assign(value, value + size);
    return a;
}

aclBoolArray *aclCreateBoolArray(const bool *value, uint64_t size) {
    if (value == nullptr && size > 0) return nullptr;
    auto *a = new (std::nothrow) aclBoolArray();
    if (a != nullptr) a->values.assign(value, value + size);
    return a;
}

aclnnStatus aclDestroyTensor(const aclTensor *tensor) {
    delete tensor;
    return ACLNN_SUCCESS;
}

aclnnStatus aclDestroyScalar(const aclScalar *scalar) {
    delete scalar;
    return ACLNN_SUCCESS;
}

aclnnStatus aclDestroyIntArray(const aclIntArray *array) {
    delete array;
    return ACLNN_SUCCESS;
}

aclnnStatus aclDestroyFloatArray(const aclFloatArray *array) {
    delete array;
    return ACLNN_SUCCESS;
}

aclnnStatus aclDestroyBoolArray(const aclBoolArray *array) {
    delete array;
    return ACLNN_SUCCESS;
}

aclnnStatus aclGetViewShape(const aclTensor *tensor, int64_t **viewDims, uint64_t *viewDimsNum) {
    if (tensor == nullptr || viewDims == nullptr || viewDimsNum == nullptr)
        return NullParam("aclGetViewShape", "tensor, viewDims or viewDimsNum");
    *viewDims = CopyOut(tensor->view);
    *viewDimsNum = tensor->view.size();
    return ACLNN_SUCCESS;
}

aclnnStatus aclGetStorageShape(const aclTensor *tensor, int64_t **storageDims, uint64_t *storageDimsNum) {
    if (tensor == nullptr || storageDims == nullptr || storageDimsNum == nullptr)
        return NullParam("aclGetStorageShape", "tensor, storageDims or storageDimsNum");
    *storageDims = CopyOut(tensor->storage);
    *storageDimsNum = tensor->storage.size();
    return ACLNN_SUCCESS;
}

aclnnStatus aclGetViewStrides(const aclTensor *tensor, int64_t **stridesValue, uint64_t *stridesNum) {
    if (tensor == nullptr || stridesValue == nullptr || stridesNum == nullptr)
        return NullParam("aclGetViewStrides", "tensor, stridesValue or stridesNum");
    *stridesValue = CopyOut(tensor->strides);
    *stridesNum = tensor->strides.size();
    return ACLNN_SUCCESS;
}

aclnnStatus aclGetViewOffset(const aclTensor *tensor, int64_t *offset) {
    if (tensor == nullptr || offset == nullptr) return NullParam("aclGetViewOffset", "tensor or offset");
    *offset = tensor->offset;
    return ACLNN_SUCCESS;
}

aclnnStatus aclGetFormat(const aclTensor *tensor, aclFormat *format) {
    if (tensor == nullptr || format == nullptr) return NullParam("aclGetFormat", "tensor or format");
    *format = tensor->format;
    return ACLNN_SUCCESS;
}

aclnnStatus aclGetDataType(const aclTensor *tensor, aclDataType *dataType) {
    if (tensor == nullptr || dataType == nullptr) return NullParam("aclGetDataType", "tensor or dataType");
    *dataType = tensor->dtype;
    return ACLNN_SUCCESS;
}

aclnnStatus aclGetIntArraySize(const aclIntArray *array, uint64_t *size) {
    if (array == nullptr || size == nullptr) return NullParam("aclGetIntArraySize", "array or size");
    *size = array->values.size();
    return ACLNN_SUCCESS;
}

const int64_t *aclemuIntArrayValues(const aclIntArray *array, uint64_t *size) {
    if (size != nullptr) *size = array == nullptr ? 0 : array->values.size();
    return array == nullptr || array->values.empty() ? nullptr : array->values.data();
}

aclnnStatus aclGetRawTensorAddr(const aclTensor *tensor, void **addr) {
    if (tensor == nullptr || addr == nullptr) return NullParam("aclGetRawTensorAddr", "tensor or addr");
    *addr = tensor->data;
    return ACLNN_SUCCESS;
}

aclnnStatus aclSetRawTensorAddr(aclTensor *tensor, void *addr) {
    if (tensor == nullptr) return NullParam("aclSetRawTensorAddr", "tensor");
    tensor->data = addr;
    return ACLNN_SUCCESS;
}

aclnnStatus aclSetAclOpExecutorRepeatable(aclOpExecutor *executor) {
    if (executor == nullptr) return NullParam("aclSetAclOpExecutorRepeatable", "executor");
    executor->repeatable = true;
    return ACLNN_SUCCESS;
}

aclnnStatus aclDestroyAclOpExecutor(aclOpExecutor *executor) {
    if (executor == nullptr) return NullParam("aclDestroyAclOpExecutor", "executor");
    ReleaseExecutor(executor);
    return ACLNN_SUCCESS;
}

aclOpExecutor *aclemuCreateExecutor(aclemuRunFn run, aclemuReleaseFn release, void *ctx) {
    auto *e = new (std::nothrow) aclOpExecutor();
    if (e == nullptr) return nullptr;
    e->run = run;
    e->release = release;
    e->ctx = ctx;
    return e;
}

aclnnStatus aclemuLaunch(aclOpExecutor *executor, void *workspace, uint64_t workspaceSize, aclrtStream stream) {
    if (executor == nullptr) return NullParam("aclnn second phase", "executor");
    if (workspaceSize > 0 && !aclemuIsDeviceRange(workspace, workspaceSize)) {
        aclemuSetRecentErrMsg(
            "AclNN_Parameter_Error(EZ1001): the workspace is not device memory of workspaceSize bytes "
            "(allocate it with aclrtMalloc).");
        return ACLNN_ERR_PARAM_INVALID;
    }
    aclnnStatus status = RunProfiled(executor, workspace, workspaceSize, stream);
    if (!executor->repeatable) ReleaseExecutor(executor);
    return status;
}

void aclemuSetExecutorKernel(aclOpExecutor *executor, const char *api, const aclemuKernelDesc *desc) {
    if (executor == nullptr || desc == nullptr) return;
    auto *k = new (std::nothrow) KernelInfo();
    if (k == nullptr) return;
    k->api = Text(api);
    k->name = Text(desc->name);
    k->op_type = Text(desc->opType);
    k->core = Text(desc->coreType);
    k->block = desc->blockDim;
    k->mix_block = desc->mixBlockDim;
    k->in_shapes = Text(desc->inputShapes);
    k->in_dtypes = Text(desc->inputDtypes);
    k->in_formats = Text(desc->inputFormats);
    k->out_shapes = Text(desc->outputShapes);
    k->out_dtypes = Text(desc->outputDtypes);
    k->out_formats = Text(desc->outputFormats);
    delete executor->kernel;
    executor->kernel = k;
}

}  // extern "C"
