/*
 * cannbuild sandbox stand-in for op_graph/flash_attention_score_proto.h: the real header
 * declares the FlashAttentionScore operator with REG_OP (graph/operator_reg.h, a stub in the
 * sandbox's toolkit) over metadef's types (graph/types.h, declared).
 */
#ifndef CANNBUILD_STANDIN_FLASH_ATTENTION_SCORE_PROTO_H_
#define CANNBUILD_STANDIN_FLASH_ATTENTION_SCORE_PROTO_H_

#include "graph/operator_reg.h"
#include "graph/types.h"

#endif  // CANNBUILD_STANDIN_FLASH_ATTENTION_SCORE_PROTO_H_
