// cannbuild sandbox stand-in for the tiling library (libcust_opmaster_rt2.0.so).
#include "op_common/op_host/util/opbase_export.h"

extern "C" int64_t CannbuildStandinTilingBlocks(int64_t seq, int64_t block) { return op_util::CeilDiv(seq, block); }
