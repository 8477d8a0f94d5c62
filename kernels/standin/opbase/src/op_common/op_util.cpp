// cannbuild sandbox stand-in for opbase's op_common host utilities.
#include "op_common/op_host/util/opbase_export.h"

#ifdef SANDBOX_FAULT_OPBASE_BUILD_FAIL
static_assert(false, "cannbuild sandbox fault build-fail:opbase");
#endif

#ifndef OPBASE_VERSION
#define OPBASE_VERSION "unknown"
#endif

namespace op_util {

int64_t ShapeSize(const int64_t *dims, uint64_t num) {
    int64_t size = 1;
    for (uint64_t i = 0; i < num; ++i) {
        if (dims[i] < 0) return -1;
        size *= dims[i];
    }
    return size;
}

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

const char *OpbaseVersion() { return OPBASE_VERSION; }

}  // namespace op_util
