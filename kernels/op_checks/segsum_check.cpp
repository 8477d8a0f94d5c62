// cannbuild validation: ops-math's aclnnExpSegsum through the C API.
//   segsum_check <manifest>; a case: name dtype shape=<self dims> in=<file> out=<file>
// out's shape is self's with its last dim repeated (aclnn_segsum.h).
#include "aclnn_segsum.h"
#include "op_check.h"

int main(int argc, char **argv) {
    return op_check::Main(argc, argv, [](const op_check::Case &c, aclrtStream stream) {
        std::vector<int64_t> shape = c.Ints("shape"), out_shape = c.Ints("shape");
        out_shape.push_back(shape.back());
        std::vector<char> host = op_check::ReadFile(c.Get("in"), op_check::Count(shape) * c.Elem());
        op_check::DeviceTensor self, out;
        self.Make(shape, c.Dtype(), c.Elem(), ACL_FORMAT_ND, &host);
        out.Make(out_shape, c.Dtype(), c.Elem(), ACL_FORMAT_ND, nullptr);
        op_check::TwoPhase(
            stream, "aclnnExpSegsum",
            [&](uint64_t *size, aclOpExecutor **executor) {
                return aclnnExpSegsumGetWorkspaceSize(self.tensor, out.tensor, size, executor);
            },
            aclnnExpSegsum);
        op_check::WriteFile(c.Get("out"), out.Download());
    });
}
