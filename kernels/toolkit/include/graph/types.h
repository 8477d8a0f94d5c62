/*
 * cannbuild sandbox: graph/types.h of the sandbox toolkit, a subset of metadef's
 * (hicann/metadef inc/external/graph/types.h): the ge::DataType and ge::Format values a
 * FlashAttention operator's prototype names, with metadef's numbers (DT_FLOAT = 0,
 * DT_FLOAT16 = 1, DT_BF16 = 27, per the size table of that header; FORMAT_ND = 2).
 */
#ifndef CANNBUILD_SANDBOX_GRAPH_TYPES_H
#define CANNBUILD_SANDBOX_GRAPH_TYPES_H

namespace ge {

enum DataType {
    DT_FLOAT = 0,
    DT_FLOAT16 = 1,
    DT_INT8 = 2,
    DT_INT32 = 3,
    DT_UINT8 = 4,
    DT_INT64 = 9,
    DT_BOOL = 12,
    DT_BF16 = 27,
};

enum Format {
    FORMAT_NCHW = 0,
    FORMAT_NHWC = 1,
    FORMAT_ND = 2,
};

}  // namespace ge

#endif  // CANNBUILD_SANDBOX_GRAPH_TYPES_H
