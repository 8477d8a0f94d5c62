// cannbuild sandbox stand-in: the Segsum kernel on the CPU, in float for every dtype
// (FLOAT16 and BFLOAT16 are cast to float and back, as the AscendC kernel does).
//
// Fault hook, compiled in only when the stand-in build.sh is asked for it
// (CANNBUILD_SANDBOX_FAULT=segsum-diagonal): SANDBOX_FAULT_SEGSUM_DIAGONAL masks one
// place off, summing x[j] too (a triangle mask that keeps its diagonal).

#include "segsum_cpu.h"

#include <cmath>
#include <vector>

namespace segsum {

void Forward(const standin::View &self, const standin::View &out) {
    const size_t rank = self.shape.size();
    const int64_t n = self.shape[rank - 1];
    std::vector<int64_t> lead(self.shape.begin(), self.shape.end() - 1);
    std::vector<int64_t> at(rank, 0), at_out(rank + 1, 0);
    std::vector<int64_t> index(lead.size(), 0);
    std::vector<float> x(n);
    bool more = !lead.empty() || n > 0;
    while (more) {
        for (size_t d = 0; d < lead.size(); ++d) at[d] = at_out[d] = index[d];
        for (int64_t k = 0; k < n; ++k) {
            at[rank - 1] = k;
            x[k] = standin::Load(self.At(at.data()), self.dtype);
        }
        for (int64_t j = 0; j < n; ++j) {
#ifdef SANDBOX_FAULT_SEGSUM_DIAGONAL
            float sum = x[j];
#else
            float sum = 0.0f;
#endif
            for (int64_t i = 0; i < n; ++i) {
                if (i > j) sum += x[i];
                at_out[rank - 1] = i;
                at_out[rank] = j;
                standin::Store(out.At(at_out.data()), out.dtype, i >= j ? std::exp(sum) : 0.0f);
            }
        }
        more = !lead.empty() && standin::Next(lead, &index);
    }
}

}  // namespace segsum
