/*
 * cannbuild sandbox stand-in for opbase's op_common utilities: the few host
 * helpers the stand-in operators use, so ops-transformer really depends on
 * opbase (installed before 9.0, as source from 9.0) the way the real one does.
 */
#ifndef CANNBUILD_STANDIN_OPBASE_EXPORT_H_
#define CANNBUILD_STANDIN_OPBASE_EXPORT_H_

#include <cstdint>

#define OPBASE_API __attribute__((visibility("default")))

namespace op_util {

// Product of the dims, or -1 when a dim is negative.
OPBASE_API int64_t ShapeSize(const int64_t *dims, uint64_t num);
// Ceiling division for tiling (b > 0).
OPBASE_API int64_t CeilDiv(int64_t a, int64_t b);
// The opbase version this library was built from.
OPBASE_API const char *OpbaseVersion();

}  // namespace op_util

#endif  // CANNBUILD_STANDIN_OPBASE_EXPORT_H_
