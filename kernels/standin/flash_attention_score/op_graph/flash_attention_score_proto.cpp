// cannbuild sandbox stand-in for the operator prototype library
// (libcust_opsproto_rt2.0.so): graph-mode registration is not emulated.
#include "flash_attention_score_proto.h"

// ge::DataType as metadef declares it (graph/types.h): the dtypes FlashAttentionScore takes.
static_assert(ge::DT_FLOAT16 == 1 && ge::DT_BF16 == 27 && ge::DT_FLOAT == 0, "metadef's DataType values");

extern "C" const char *CannbuildStandinOpProto() { return "FlashAttentionScore"; }
