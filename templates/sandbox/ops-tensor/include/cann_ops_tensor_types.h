// cannbuild sandbox stand-in for cann/ops-tensor's include/cann_ops_tensor_types.h.
#ifndef CANN_OPS_TENSOR_TYPES_H
#define CANN_OPS_TENSOR_TYPES_H
namespace cann_ops_tensor {
enum class Layout { ND, NZ, DN };
}  // namespace cann_ops_tensor
#endif
