/*
 * cannbuild sandbox: IEEE binary16 and bfloat16 conversions (round to nearest
 * even), shared by the emulated runtime and the stand-in operators.
 */
#ifndef CANNBUILD_EMU_HALF_H_
#define CANNBUILD_EMU_HALF_H_

#include <cstdint>
#include <cstring>

namespace emu {

inline float BitsToFloat(uint32_t bits) {
    float f;
    std::memcpy(&f, &bits, sizeof(f));
    return f;
}

inline uint32_t FloatToBits(float f) {
    uint32_t bits;
    std::memcpy(&bits, &f, sizeof(bits));
    return bits;
}

inline float HalfToFloat(uint16_t h) {
    uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1Fu;
    uint32_t mant = h & 0x3FFu;
    if (exp == 0x1F) return BitsToFloat(sign | 0x7F800000u | (mant << 13));
    if (exp == 0) {
        // zero or subnormal: mant * 2^-24
        float v = static_cast<float>(mant) * (1.0f / 16777216.0f);
        return sign ? -v : v;
    }
    return BitsToFloat(sign | ((exp + 112u) << 23) | (mant << 13));
}

inline uint16_t FloatToHalf(float f) {
    uint32_t x = FloatToBits(f);
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t absx = x & 0x7FFFFFFFu;
    if (absx > 0x7F800000u) return static_cast<uint16_t>(sign | 0x7E00u);  // NaN stays NaN
    if (absx >= 0x477FF000u) return static_cast<uint16_t>(sign | 0x7C00u);  // overflow -> inf
    if (absx < 0x38800000u) {  // result is subnormal or zero
        if (absx < 0x33000000u) return static_cast<uint16_t>(sign);
        uint32_t e = absx >> 23;
        uint32_t m24 = (absx & 0x7FFFFFu) | 0x800000u;
        uint32_t shift = 126u - e;
        uint32_t result = m24 >> shift;
        uint32_t rem = m24 & ((1u << shift) - 1u);
        uint32_t halfway = 1u << (shift - 1u);
        if (rem > halfway || (rem == halfway && (result & 1u))) ++result;
        return static_cast<uint16_t>(sign | result);
    }
    uint32_t result = (((absx >> 23) - 112u) << 10) | ((absx >> 13) & 0x3FFu);
    uint32_t rem = absx & 0x1FFFu;
    if (rem > 0x1000u || (rem == 0x1000u && (result & 1u))) ++result;  // a carry rounds up the exponent
    return static_cast<uint16_t>(sign | result);
}

inline float Bf16ToFloat(uint16_t b) { return BitsToFloat(static_cast<uint32_t>(b) << 16); }

inline uint16_t FloatToBf16(float f) {
    uint32_t x = FloatToBits(f);
    if ((x & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // quiet NaN
    uint32_t rounding = 0x7FFFu + ((x >> 16) & 1u);
    return static_cast<uint16_t>((x + rounding) >> 16);
}

}  // namespace emu

#endif  // CANNBUILD_EMU_HALF_H_
