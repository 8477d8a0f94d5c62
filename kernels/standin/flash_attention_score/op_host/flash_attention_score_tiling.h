/*
 * cannbuild sandbox stand-in: the FlashAttention tiling, shared by the tiling library
 * and the kernel (as a real op's TilingData is).  The tile sizes are query-block rows
 * (Br) and key/value-block rows (Bc); a variant changes them with a patch of this file or
 * with compile definitions (-DFA_TILING_QUERY_BLOCK_ROWS=128 in CXXFLAGS).
 */
#ifndef CANNBUILD_STANDIN_FLASH_ATTENTION_SCORE_TILING_H_
#define CANNBUILD_STANDIN_FLASH_ATTENTION_SCORE_TILING_H_

#include <cstdint>

#ifndef FA_TILING_QUERY_BLOCK_ROWS
#define FA_TILING_QUERY_BLOCK_ROWS 64
#endif
#ifndef FA_TILING_KEY_BLOCK_ROWS
#define FA_TILING_KEY_BLOCK_ROWS 64
#endif

namespace fa_tiling {

constexpr int64_t kQueryBlockRows = FA_TILING_QUERY_BLOCK_ROWS;  // query rows per tile
constexpr int64_t kKeyBlockRows = FA_TILING_KEY_BLOCK_ROWS;      // key/value rows per tile
constexpr int kMicroRows = 4;  // query rows the kernel's micro-kernels keep in registers

static_assert(kQueryBlockRows >= kMicroRows && kQueryBlockRows % kMicroRows == 0,
              "FA_TILING_QUERY_BLOCK_ROWS must be a positive multiple of 4");
static_assert(kKeyBlockRows >= 8 && kKeyBlockRows <= 512 && kKeyBlockRows % 8 == 0,
              "FA_TILING_KEY_BLOCK_ROWS must be a multiple of 8 in [8, 512]");

}  // namespace fa_tiling

#endif  // CANNBUILD_STANDIN_FLASH_ATTENTION_SCORE_TILING_H_
