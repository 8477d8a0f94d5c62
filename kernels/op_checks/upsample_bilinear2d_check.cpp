// cannbuild validation: ops-cv's aclnnUpsampleBilinear2d through the C API.
//   upsample_bilinear2d_check <manifest>; a case: name dtype shape=<N,C,H,W> size=<OH,OW>
//   align=<0|1> scales=<h,w> in=<file> out=<file>; NCHW tensors, as the example passes them.
#include "aclnn_upsample_bilinear_2d.h"
#include "op_check.h"

int main(int argc, char **argv) {
    return op_check::Main(argc, argv, [](const op_check::Case &c, aclrtStream stream) {
        std::vector<int64_t> shape = c.Ints("shape"), size = c.Ints("size");
        std::vector<int64_t> out_shape = {shape[0], shape[1], size[0], size[1]};
        std::stringstream scales(c.Get("scales"));
        std::string h, w;
        std::getline(scales, h, ',');
        std::getline(scales, w, ',');
        std::vector<char> host = op_check::ReadFile(c.Get("in"), op_check::Count(shape) * c.Elem());
        op_check::DeviceTensor self, out;
        self.Make(shape, c.Dtype(), c.Elem(), ACL_FORMAT_NCHW, &host);
        out.Make(out_shape, c.Dtype(), c.Elem(), ACL_FORMAT_NCHW, nullptr);
        aclIntArray *output_size = aclCreateIntArray(size.data(), size.size());
        struct Release {
            aclIntArray *a;
            ~Release() { aclDestroyIntArray(a); }
        } release{output_size};
        op_check::TwoPhase(
            stream, "aclnnUpsampleBilinear2d",
            [&](uint64_t *ws, aclOpExecutor **executor) {
                return aclnnUpsampleBilinear2dGetWorkspaceSize(self.tensor, output_size, c.Int("align") != 0,
                                                               std::strtod(h.c_str(), nullptr),
                                                               std::strtod(w.c_str(), nullptr), out.tensor, ws,
                                                               executor);
            },
            aclnnUpsampleBilinear2d);
        op_check::WriteFile(c.Get("out"), out.Download());
    });
}
