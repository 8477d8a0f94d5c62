// cannbuild sandbox stand-in for ops-cv's image/upsample_bilinear2d/examples/
// test_aclnn_upsample_bilinear2d.cpp: the same inputs (self {1,1,4,2} = 0 .. 7 in FLOAT, NCHW,
// outputSize {8,4}, alignCorners true, scales 2.0 and 2.0, out {1,1,8,4}), the same calls and
// the same output, one `result[i] is: x` line per element of out, values unchecked.
#include <cstdio>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_upsample_bilinear_2d.h"

#define CHECK_RET(cond, return_expr) \
    do {                             \
        if (!(cond)) {               \
            return_expr;             \
        }                            \
    } while (0)

#define LOG_PRINT(message, ...) printf(message, ##__VA_ARGS__)

static int64_t ShapeSize(const std::vector<int64_t> &shape) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
}

static int Init(int32_t device, aclrtStream *stream) {
    auto ret = aclInit(nullptr);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclInit failed. ERROR: %d\n", ret); return ret);
    ret = aclrtSetDevice(device);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtSetDevice failed. ERROR: %d\n", ret); return ret);
    ret = aclrtCreateStream(stream);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtCreateStream failed. ERROR: %d\n", ret); return ret);
    return 0;
}

static int DeviceTensor(const std::vector<float> &host, const std::vector<int64_t> &shape, void **addr,
                        aclTensor **tensor) {
    size_t bytes = ShapeSize(shape) * sizeof(float);
    auto ret = aclrtMalloc(addr, bytes, ACL_MEM_MALLOC_HUGE_FIRST);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtMalloc failed. ERROR: %d\n", ret); return ret);
    ret = aclrtMemcpy(*addr, bytes, host.data(), bytes, ACL_MEMCPY_HOST_TO_DEVICE);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtMemcpy failed. ERROR: %d\n", ret); return ret);
    std::vector<int64_t> strides(shape.size(), 1);
    for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; i--) strides[i] = shape[i + 1] * strides[i + 1];
    *tensor = aclCreateTensor(shape.data(), shape.size(), ACL_FLOAT, strides.data(), 0, ACL_FORMAT_NCHW, shape.data(),
                              shape.size(), *addr);
    return 0;
}

int main() {
    int32_t device = 0;
    aclrtStream stream;
    auto ret = Init(device, &stream);
    CHECK_RET(ret == 0, LOG_PRINT("Init acl failed. ERROR: %d\n", ret); return ret);

    std::vector<int64_t> selfShape = {1, 1, 4, 2};
    std::vector<int64_t> outShape = {1, 1, 8, 4};
    std::vector<float> selfHost = {0, 1, 2, 3, 4, 5, 6, 7};
    std::vector<float> outHost(32, 0);
    std::vector<int64_t> outputSize = {8, 4};
    bool alignCorners = true;
    double scalesH = 2.0;
    double scalesW = 2.0;
    void *selfAddr = nullptr;
    void *outAddr = nullptr;
    aclTensor *self = nullptr;
    aclTensor *out = nullptr;
    ret = DeviceTensor(selfHost, selfShape, &selfAddr, &self);
    CHECK_RET(ret == ACL_SUCCESS, return ret);
    auto outputSizeArray = aclCreateIntArray(outputSize.data(), 2);
    ret = DeviceTensor(outHost, outShape, &outAddr, &out);
    CHECK_RET(ret == ACL_SUCCESS, return ret);

    uint64_t workspaceSize = 0;
    aclOpExecutor *executor;
    ret = aclnnUpsampleBilinear2dGetWorkspaceSize(
        self, outputSizeArray, alignCorners, scalesH, scalesW, out, &workspaceSize, &executor);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclnnUpsampleBilinear2dGetWorkspaceSize failed. ERROR: %d\n", ret); return ret);
    void *workspace = nullptr;
    if (workspaceSize > 0) {
        ret = aclrtMalloc(&workspace, workspaceSize, ACL_MEM_MALLOC_HUGE_FIRST);
        CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("allocate workspace failed. ERROR: %d\n", ret); return ret);
    }
    ret = aclnnUpsampleBilinear2d(workspace, workspaceSize, executor, stream);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclnnUpsampleBilinear2d failed. ERROR: %d\n", ret); return ret);
    ret = aclrtSynchronizeStream(stream);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtSynchronizeStream failed. ERROR: %d\n", ret); return ret);

    auto size = ShapeSize(outShape);
    std::vector<float> result(size, 0);
    ret = aclrtMemcpy(result.data(), size * sizeof(float), outAddr, size * sizeof(float), ACL_MEMCPY_DEVICE_TO_HOST);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("copy result from device to host failed. ERROR: %d\n", ret); return ret);
    for (int64_t i = 0; i < size; i++) {
        LOG_PRINT("result[%ld] is: %f\n", i, result[i]);
    }

    aclDestroyTensor(self);
    aclDestroyTensor(out);
    aclDestroyIntArray(outputSizeArray);
    aclrtFree(selfAddr);
    aclrtFree(outAddr);
    if (workspaceSize > 0) aclrtFree(workspace);
    aclrtDestroyStream(stream);
    aclrtResetDevice(device);
    aclFinalize();
    return 0;
}
