// cannbuild sandbox stand-in: FlashAttention-2 forward on the CPU (see the header).
//
// Fault hooks, compiled in only when the stand-in build.sh is asked for them
// (CANNBUILD_SANDBOX_FAULT): SANDBOX_FAULT_WRONG_SCALE squares the softmax scale, as
// a kernel that pre-scales both Q and K would; SANDBOX_FAULT_NAN writes a NaN into
// every head's first output row.

#include "flash_attention_score_cpu.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "../op_host/flash_attention_score_tiling.h"
#include "emu/half.h"

namespace fa {
namespace {

// Tile sizes from the tiling (op_host): query rows per tile, and key/value rows per tile
// (compile-time: the micro-kernels unroll it).
constexpr int64_t kBlockRows = fa_tiling::kQueryBlockRows;
constexpr int64_t kBlockCols = fa_tiling::kKeyBlockRows;
constexpr int kMicroRows = fa_tiling::kMicroRows;
constexpr float kMaskedScore = -40000.0f;  // what the ops-transformer golden model fills in

// exp(x) for x <= 0 as 2^n * 2^f with a degree-7 polynomial (about 1 ulp);
// unlike std::exp it vectorises, which is most of the kernel's time.
inline float FastExp(float x) {
    x = x < -87.0f ? -87.0f : x;
    const float t = x * 1.44269504088896341f;
    const float n = (t + 12582912.0f) - 12582912.0f;  // round to nearest
    const float f = t - n;
    float p = 1.5252734e-05f;
    p = p * f + 1.5403530e-04f;
    p = p * f + 1.3333558e-03f;
    p = p * f + 9.6181291e-03f;
    p = p * f + 5.5504109e-02f;
    p = p * f + 2.4022651e-01f;
    p = p * f + 6.9314718e-01f;
    p = p * f + 1.0f;
    const int32_t bits = (static_cast<int32_t>(n) + 127) << 23;
    float scale;
    std::memcpy(&scale, &bits, sizeof(scale));
    return p * scale;
}

// s[i][c] = q[i] . kt[:, c] for kMicroRows query rows and kBlockCols keys.
inline void QkMicro(const float *__restrict q, int64_t D, const float *__restrict kt, float *__restrict s) {
    float acc[kMicroRows][kBlockCols] = {};
    for (int64_t d = 0; d < D; ++d) {
        const float *__restrict krow = kt + d * kBlockCols;
        for (int i = 0; i < kMicroRows; ++i) {
            const float qi = q[i * D + d];
            for (int c = 0; c < kBlockCols; ++c) acc[i][c] += qi * krow[c];
        }
    }
    std::memcpy(s, acc, sizeof(acc));
}

// o[i][d0:d0+W] = alpha[i] * o[i][d0:d0+W] + sum_c p[i][c] * v[c][d0:d0+W]
template <int W>
inline void PvMicro(const float *__restrict p, const float *__restrict v, int64_t ldv, float *__restrict o,
                    int64_t ldo, const float *__restrict alpha) {
    float acc[kMicroRows][W];
    for (int i = 0; i < kMicroRows; ++i)
        for (int d = 0; d < W; ++d) acc[i][d] = o[i * ldo + d] * alpha[i];
    for (int c = 0; c < kBlockCols; ++c) {
        const float *__restrict vrow = v + c * ldv;
        for (int i = 0; i < kMicroRows; ++i) {
            const float pc = p[i * kBlockCols + c];
            for (int d = 0; d < W; ++d) acc[i][d] += pc * vrow[d];
        }
    }
    for (int i = 0; i < kMicroRows; ++i)
        for (int d = 0; d < W; ++d) o[i * ldo + d] = acc[i][d];
}

struct F32 {
    static float Load(const void *base, int64_t i) { return static_cast<const float *>(base)[i]; }
    static void Store(void *base, int64_t i, float v) { static_cast<float *>(base)[i] = v; }
};
struct F16 {
    static float Load(const void *base, int64_t i) { return emu::HalfToFloat(static_cast<const uint16_t *>(base)[i]); }
    static void Store(void *base, int64_t i, float v) { static_cast<uint16_t *>(base)[i] = emu::FloatToHalf(v); }
};
struct BF16 {
    static float Load(const void *base, int64_t i) { return emu::Bf16ToFloat(static_cast<const uint16_t *>(base)[i]); }
    static void Store(void *base, int64_t i, float v) { static_cast<uint16_t *>(base)[i] = emu::FloatToBf16(v); }
};

// One batch's rows: where its query rows and keys start on the sequence (T) axis, and how many.
struct Rows {
    int64_t q0, s1, k0, s2;
};

Rows BatchRows(const Problem &p, int64_t b) {
    const Segments &g = p.segments;
    if (g.q_len.empty()) return {0, p.S1, 0, p.S2};
    return {g.q_start[b], g.q_len[b], g.kv_start[b], g.kv_len[b]};
}

// Whether query row i may not see key j of batch b (both counted within the batch); the
// bottom-right modes 3 and 4 align on the batch's own lengths.
bool Masked(const Problem &p, const Rows &rows, int64_t b, int64_t n, int64_t i, int64_t j) {
    const MaskView &m = p.mask;
    const int64_t diag = j - i;
    const int64_t mi = m.by_token ? rows.q0 + i : i, mj = m.by_token ? rows.k0 + j : j;
    switch (p.sparse_mode) {
        case 0:
            return m.data[b * m.sb + n * m.sn + mi * m.s1 + mj * m.s2] != 0 || diag > p.next_tokens ||
                   -diag > p.pre_tokens;
        case 1:
            return m.data[b * m.sb + n * m.sn + mi * m.s1 + mj * m.s2] != 0;
        case 2:
            return diag > 0;
        case 3:
            return diag > rows.s2 - rows.s1;
        case 4: {
            int64_t shifted = diag - (rows.s2 - rows.s1);
            return shifted > p.next_tokens || -shifted > p.pre_tokens;
        }
        default:
            return false;
    }
}

template <class T>
void ForwardTyped(const Problem &p) {
    const int64_t Br = kBlockRows, Bc = kBlockCols, D = p.D, Dv = p.Dv;
    const int64_t Dvp = (Dv + 15) / 16 * 16;  // value rows padded to whole 16-float vectors
    const int64_t q_blocks = (p.S1 + Br - 1) / Br;
    const int64_t tasks = p.B * p.N1 * q_blocks;
    const int64_t group = p.N1 / p.N2;
    float scale = static_cast<float>(p.scale);
#ifdef SANDBOX_FAULT_WRONG_SCALE
    scale = scale * scale;
#endif
    const bool has_mask = p.mask.data != nullptr;
    const float neg_inf = -std::numeric_limits<float>::infinity();

#pragma omp parallel
    {
        std::vector<float> q(Br * D), kt(D * Bc), v(Bc * Dvp), s(Br * Bc), o(Br * Dvp), m(Br), l(Br), alpha(Br);
#pragma omp for schedule(dynamic, 1)
        for (int64_t t = 0; t < tasks; ++t) {
            const int64_t b = t / (p.N1 * q_blocks);
            const int64_t n1 = (t / q_blocks) % p.N1;
            const int64_t r0 = (t % q_blocks) * Br;
            const int64_t n2 = n1 / group;
            const Rows seg = BatchRows(p, b);
            if (r0 >= seg.s1) continue;  // VarLen: this batch is shorter than the longest
            const int64_t rows = std::min(Br, seg.s1 - r0);
            const int64_t rows_padded = (rows + kMicroRows - 1) / kMicroRows * kMicroRows;

            const int64_t qbase = b * p.q.sb + n1 * p.q.sn + seg.q0 * p.q.ss;
            std::fill(q.begin(), q.end(), 0.0f);
            for (int64_t r = 0; r < rows; ++r)
                for (int64_t d = 0; d < D; ++d) q[r * D + d] = T::Load(p.q.data, qbase + (r0 + r) * p.q.ss + d * p.q.sd);
            std::fill(m.begin(), m.end(), neg_inf);
            std::fill(l.begin(), l.end(), 0.0f);
            std::fill(o.begin(), o.end(), 0.0f);

            const int64_t kbase = b * p.k.sb + n2 * p.k.sn + seg.k0 * p.k.ss;
            const int64_t vbase = b * p.v.sb + n2 * p.v.sn + seg.k0 * p.v.ss;
            for (int64_t c0 = 0; c0 < seg.s2; c0 += Bc) {
                const int64_t cols = std::min(Bc, seg.s2 - c0);
                if (cols < Bc) {
                    std::fill(kt.begin(), kt.end(), 0.0f);
                    std::fill(v.begin(), v.end(), 0.0f);
                }
                for (int64_t c = 0; c < cols; ++c)
                    for (int64_t d = 0; d < D; ++d)
                        kt[d * Bc + c] = T::Load(p.k.data, kbase + (c0 + c) * p.k.ss + d * p.k.sd);
                for (int64_t c = 0; c < cols; ++c)
                    for (int64_t d = 0; d < Dv; ++d)
                        v[c * Dvp + d] = T::Load(p.v.data, vbase + (c0 + c) * p.v.ss + d * p.v.sd);

                for (int64_t r = 0; r < rows_padded; r += kMicroRows) QkMicro(&q[r * D], D, kt.data(), &s[r * Bc]);

                for (int64_t r = 0; r < rows; ++r) {
                    float *srow = &s[r * Bc];
                    float block_max = neg_inf;
                    for (int64_t c = 0; c < cols; ++c) {
                        srow[c] *= scale;
                        if (has_mask && Masked(p, seg, b, n1, r0 + r, c0 + c)) srow[c] = kMaskedScore;
                        block_max = std::max(block_max, srow[c]);
                    }
                    const float m_new = std::max(m[r], block_max);
                    alpha[r] = m[r] == neg_inf ? 0.0f : FastExp(m[r] - m_new);
                    float sum = 0.0f;
                    for (int64_t c = 0; c < cols; ++c) {
                        const float e = FastExp(srow[c] - m_new);
                        srow[c] = e;
                        sum += e;
                    }
                    for (int64_t c = cols; c < Bc; ++c) srow[c] = 0.0f;
                    l[r] = alpha[r] * l[r] + sum;
                    m[r] = m_new;
                }
                for (int64_t r = rows; r < rows_padded; ++r) {
                    std::fill(&s[r * Bc], &s[r * Bc] + Bc, 0.0f);
                    alpha[r] = 0.0f;
                }

                for (int64_t r = 0; r < rows_padded; r += kMicroRows) {
                    int64_t d0 = 0;
                    for (; d0 + 64 <= Dvp; d0 += 64)
                        PvMicro<64>(&s[r * Bc], &v[d0], Dvp, &o[r * Dvp + d0], Dvp, &alpha[r]);
                    for (; d0 < Dvp; d0 += 16)
                        PvMicro<16>(&s[r * Bc], &v[d0], Dvp, &o[r * Dvp + d0], Dvp, &alpha[r]);
                }
            }

            const int64_t obase = b * p.out.sb + n1 * p.out.sn + seg.q0 * p.out.ss;
            const int64_t mbase = b * p.smax.sb + n1 * p.smax.sn + seg.q0 * p.smax.ss;
            const int64_t sbase = b * p.ssum.sb + n1 * p.ssum.sn + seg.q0 * p.ssum.ss;
            void *out = const_cast<void *>(p.out.data);
            float *smax = static_cast<float *>(const_cast<void *>(p.smax.data));
            float *ssum = static_cast<float *>(const_cast<void *>(p.ssum.data));
            for (int64_t r = 0; r < rows; ++r) {
                const float inv = l[r] > 0.0f ? 1.0f / l[r] : 0.0f;  // no keys (a VarLen batch of kv length 0): 0
                for (int64_t d = 0; d < Dv; ++d)
                    T::Store(out, obase + (r0 + r) * p.out.ss + d * p.out.sd, o[r * Dvp + d] * inv);
                for (int64_t lane = 0; lane < 8; ++lane) {
                    smax[mbase + (r0 + r) * p.smax.ss + lane * p.smax.sd] = m[r];
                    ssum[sbase + (r0 + r) * p.ssum.ss + lane * p.ssum.sd] = l[r];
                }
            }
#ifdef SANDBOX_FAULT_NAN
            if (r0 == 0) T::Store(out, obase, std::numeric_limits<float>::quiet_NaN());
#endif
        }
    }
}

}  // namespace

void Forward(const Problem &p) {
    switch (p.dtype) {
        case ACL_FLOAT16: ForwardTyped<F16>(p); break;
        case ACL_BF16: ForwardTyped<BF16>(p); break;
        default: ForwardTyped<F32>(p); break;
    }
}

}  // namespace fa
