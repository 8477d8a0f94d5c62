// cannbuild sandbox stand-in: the UpsampleBilinear2d kernel on the CPU, in float for every
// dtype.
//
// Fault hook (CANNBUILD_SANDBOX_FAULT=upsample-half-pixel): SANDBOX_FAULT_UPSAMPLE_HALF_PIXEL
// maps every output point with the half-pixel rule, whatever alignCorners says.

#include "upsample_bilinear2d_cpu.h"

#include <algorithm>
#include <vector>

namespace upsample {
namespace {

struct Tap {
    int64_t i0, i1;
    float l0, l1;
};

std::vector<Tap> Taps(int64_t in, int64_t out, double scale, bool align_corners) {
    std::vector<Tap> taps(out);
#ifdef SANDBOX_FAULT_UPSAMPLE_HALF_PIXEL
    align_corners = false;
    scale = static_cast<double>(in) / out;
#endif
    for (int64_t o = 0; o < out; ++o) {
        double src = align_corners ? o * scale : std::max(0.0, (o + 0.5) * scale - 0.5);
        int64_t i0 = std::min(static_cast<int64_t>(src), in - 1);
        int64_t i1 = std::min(i0 + 1, in - 1);
        float l1 = static_cast<float>(src - i0);
        taps[o] = {i0, i1, 1.0f - l1, l1};
    }
    return taps;
}

}  // namespace

double AxisScale(int64_t in, int64_t out, double scale, bool align_corners) {
    if (out == in) return 1.0;
    if (align_corners) return out > 1 ? static_cast<double>(in - 1) / (out - 1) : 0.0;
    return scale > 0 ? 1.0 / scale : static_cast<double>(in) / out;
}

void Forward(const standin::View &self, const standin::View &out, double scale_h, double scale_w,
             bool align_corners) {
    const int64_t N = self.shape[0], C = self.shape[1], H = self.shape[2], W = self.shape[3];
    const int64_t OH = out.shape[2], OW = out.shape[3];
    const std::vector<Tap> rows = Taps(H, OH, AxisScale(H, OH, scale_h, align_corners), align_corners);
    const std::vector<Tap> cols = Taps(W, OW, AxisScale(W, OW, scale_w, align_corners), align_corners);
    int64_t at[4], to[4];
    auto load = [&](int64_t n, int64_t c, int64_t h, int64_t w) {
        at[0] = n, at[1] = c, at[2] = h, at[3] = w;
        return standin::Load(self.At(at), self.dtype);
    };
    for (int64_t n = 0; n < N; ++n)
        for (int64_t c = 0; c < C; ++c)
            for (int64_t oh = 0; oh < OH; ++oh) {
                const Tap &r = rows[oh];
                for (int64_t ow = 0; ow < OW; ++ow) {
                    const Tap &q = cols[ow];
                    float v = r.l0 * (q.l0 * load(n, c, r.i0, q.i0) + q.l1 * load(n, c, r.i0, q.i1)) +
                              r.l1 * (q.l0 * load(n, c, r.i1, q.i0) + q.l1 * load(n, c, r.i1, q.i1));
                    to[0] = n, to[1] = c, to[2] = oh, to[3] = ow;
                    standin::Store(out.At(to), out.dtype, v);
                }
            }
}

}  // namespace upsample
