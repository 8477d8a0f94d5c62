/*
 * cannbuild sandbox stand-in: FlashAttention forward on the CPU.
 *
 * FlashAttention-2 tiling with an online softmax: for each block of query
 * rows the key/value sequence is streamed in blocks and a running max and
 * sum rescale the accumulator, so memory stays O(S*D) per head and no S x S
 * score matrix is ever materialised.
 */
#ifndef CANNBUILD_STANDIN_FLASH_ATTENTION_SCORE_CPU_H_
#define CANNBUILD_STANDIN_FLASH_ATTENTION_SCORE_CPU_H_

#include <cstdint>
#include <vector>

#include "acl/acl_base.h"

namespace fa {

// Element strides of a tensor seen as (batch, head, sequence, head-dim).
struct HeadView {
    const void *data = nullptr;
    int64_t sb = 0, sn = 0, ss = 0, sd = 0;
};

// The attention mask, broadcast over batch/head with zero strides.
struct MaskView {
    const uint8_t *data = nullptr;  // nullptr: no mask
    int64_t sb = 0, sn = 0, s1 = 0, s2 = 0;
    // VarLen: a [T1, T2] mask is indexed by T rows and columns (each batch at its own offset),
    // a [maxS1, maxS2] one by the rows and columns within the batch.
    bool by_token = false;
};

// VarLen (TND): batch b's query rows are [q_start[b], q_start[b] + q_len[b]) of the T axis
// and its keys [kv_start[b], kv_start[b] + kv_len[b]); empty for the dense layouts, where
// every batch has S1 query rows and S2 keys of its own.
struct Segments {
    std::vector<int64_t> q_start, q_len, kv_start, kv_len;
};

struct Problem {
    aclDataType dtype = ACL_FLOAT;
    int64_t B = 0, N1 = 0, N2 = 0, S1 = 0, S2 = 0, D = 0, Dv = 0;  // VarLen: S1, S2 the longest
    double scale = 1.0;
    HeadView q, k, v;
    HeadView out;       // writable, dtype as q
    HeadView smax;      // float32 [B, N1, S1, 8]
    HeadView ssum;      // float32 [B, N1, S1, 8]
    MaskView mask;
    Segments segments;
    int64_t sparse_mode = 0;
    int64_t pre_tokens = 2147483647;
    int64_t next_tokens = 2147483647;
};

// Runs the forward pass; writes out, softmax max and softmax sum.
void Forward(const Problem &p);

}  // namespace fa

#endif  // CANNBUILD_STANDIN_FLASH_ATTENTION_SCORE_CPU_H_
