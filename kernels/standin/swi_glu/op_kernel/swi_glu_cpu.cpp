// cannbuild sandbox stand-in: the SwiGlu kernel on the CPU, in float for every dtype.
//
// Fault hook (CANNBUILD_SANDBOX_FAULT=swi_glu-sigmoid): SANDBOX_FAULT_SWIGLU_SIGMOID gates
// with sigmoid(A) * B, the GLU of the Swish's sigmoid without its A factor.

#include "swi_glu_cpu.h"

#include <cmath>
#include <vector>

namespace swi_glu {

void Forward(const standin::View &x, int64_t dim, const standin::View &out) {
    const int64_t half = out.shape[dim];
    std::vector<int64_t> index(out.shape.size(), 0), a_at, b_at;
    if (out.Elements() == 0) return;
    do {
        a_at = b_at = index;
        b_at[dim] += half;
        const float a = standin::Load(x.At(a_at.data()), x.dtype);
        const float b = standin::Load(x.At(b_at.data()), x.dtype);
        const float gate = 1.0f / (1.0f + std::exp(-a));
#ifdef SANDBOX_FAULT_SWIGLU_SIGMOID
        const float value = gate * b;
#else
        const float value = a * gate * b;
#endif
        standin::Store(out.At(index.data()), out.dtype, value);
    } while (standin::Next(out.shape, &index));
}

}  // namespace swi_glu
