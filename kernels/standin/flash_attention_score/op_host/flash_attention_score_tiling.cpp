// cannbuild sandbox stand-in for the tiling library (libcust_opmaster_rt2.0.so).
#include "flash_attention_score_tiling.h"

// the toolkit headers the real tiling includes (op_host/flash_attention_score_tiling.cpp,
// flash_attention_score_tiling_common.h, arch32/..._tiling_general.cpp at v9.0.0); stubs in the
// sandbox's toolkit, found where the cmake modules put them on the include path
#include "dlog_pub.h"
#include "exe_graph/runtime/tiling_context.h"
#include "op_common/op_host/util/opbase_export.h"
#include "register/op_impl_registry.h"
#include "register/tilingdata_base.h"
#include "tiling/platform/platform_ascendc.h"
#include "tiling/tiling_api.h"

extern "C" int64_t CannbuildStandinTilingBlocks(int64_t seq, int64_t block) { return op_util::CeilDiv(seq, block); }

// The tile sizes this package was built with: {query-block rows, key/value-block rows}.
extern "C" void CannbuildStandinTileSizes(int64_t *query_rows, int64_t *key_rows) {
    *query_rows = fa_tiling::kQueryBlockRows;
    *key_rows = fa_tiling::kKeyBlockRows;
}
