// cannbuild sandbox stand-in for the operator definition (op_host/flash_attention_score_def.cpp).
// The real file registers FlashAttentionScore's inputs, outputs, attributes and SoCs with
// ops::OpDef (metadef's register/op_def_registry.h); the sandbox's copy of that header is a
// stub (cannbuild/sandbox/toolkit_files.py), so this file includes it as the real one does and
// registers nothing: the op_impl config comes from flash_attention_score_ops_info.json.in.
#include "register/op_def_registry.h"

extern "C" const char *CannbuildStandinOpDef() { return "FlashAttentionScore"; }
