// cannbuild validation: ops-nn's aclnnSwiGlu through the C API.
//   swi_glu_check <manifest>; a case: name dtype shape=<x dims> dim in=<file> out=<file>
// out's shape is x's with the size along dim halved (docs/aclnnSwiGlu.md).
#include "aclnn_swi_glu.h"
#include "op_check.h"

int main(int argc, char **argv) {
    return op_check::Main(argc, argv, [](const op_check::Case &c, aclrtStream stream) {
        std::vector<int64_t> shape = c.Ints("shape"), out_shape = c.Ints("shape");
        const int64_t dim = c.Int("dim");
        const int64_t axis = dim < 0 ? dim + static_cast<int64_t>(shape.size()) : dim;
        out_shape[axis] /= 2;
        std::vector<char> host = op_check::ReadFile(c.Get("in"), op_check::Count(shape) * c.Elem());
        op_check::DeviceTensor x, out;
        x.Make(shape, c.Dtype(), c.Elem(), ACL_FORMAT_ND, &host);
        out.Make(out_shape, c.Dtype(), c.Elem(), ACL_FORMAT_ND, nullptr);
        op_check::TwoPhase(
            stream, "aclnnSwiGlu",
            [&](uint64_t *size, aclOpExecutor **executor) {
                return aclnnSwiGluGetWorkspaceSize(x.tensor, dim, out.tensor, size, executor);
            },
            aclnnSwiGlu);
        op_check::WriteFile(c.Get("out"), out.Download());
    });
}
