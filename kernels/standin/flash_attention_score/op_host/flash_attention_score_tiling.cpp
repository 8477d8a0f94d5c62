// cannbuild sandbox stand-in for the tiling library (libcust_opmaster_rt2.0.so).
#include "flash_attention_score_tiling.h"

#include "op_common/op_host/util/opbase_export.h"

extern "C" int64_t CannbuildStandinTilingBlocks(int64_t seq, int64_t block) { return op_util::CeilDiv(seq, block); }

// The tile sizes this package was built with: {query-block rows, key/value-block rows}.
extern "C" void CannbuildStandinTileSizes(int64_t *query_rows, int64_t *key_rows) {
    *query_rows = fa_tiling::kQueryBlockRows;
    *key_rows = fa_tiling::kKeyBlockRows;
}
