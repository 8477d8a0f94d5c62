"""Why FlashAttention would not be used: one row per cause, each with its fix.

Three causes, as a CANN engineer checks them by hand:
- registration: the custom package is installed for this SoC, exports the aclnn
  entry points, and the framework would load it.  torch_npu finds
  aclnnFlashAttentionScore by dlopen of `op_api/lib/libcust_opapi.so` of each
  ASCEND_CUSTOM_OPP_PATH vendor in order, then of the toolkit's default vendors
  (`opp/vendors/config.ini` load_priority), then the toolkit's own libopapi.so
  (shared reference real-host-findings §4): the first library exporting the entry
  point wins, so a vendor earlier in the path shadows ours.
- dtype: what the installed operator supports on this SoC, read from the package's
  own op_impl config (`aic-<soc>-ops-info.json`, which the build generates from the
  op definition), else from the operator's docs in the checkout.
- shape: the limits the operator's docs in the checkout state (约束说明: the B, N, S,
  D ranges, Nq/Nkv whole, the layouts), with the file and line each comes from; and
  the head-dim alignment the tiling pads to (16-element fractals of the Cube unit:
  accepted, but padded, so a warning; a failure where the docs make it a rule).
Given a profile, each group of unfused MatMul->Softmax->MatMul chains gets the first
cause that applies to its shapes and dtype.
"""

from __future__ import annotations

from typing import List

from ..host.check import Check
from ..profile.summary import summarise
from .facts import BUILTIN_SOURCE, FA_OP, fa_checkout, operator_facts
from .inputs import DiagnoseInputs
from .registration import registration_checks
from .rules import attention_checks, profile_checks

__all__ = [
    "BUILTIN_SOURCE",
    "FA_OP",
    "DiagnoseInputs",
    "diagnose",
    "fa_checkout",
    "operator_facts",
]


def diagnose(inp: DiagnoseInputs) -> List[Check]:
    facts = operator_facts(inp.vendor_dir, inp.soc, inp.checkout)
    checks = registration_checks(inp)
    summary = inp.profile_summary
    if inp.profile is not None and summary is None:
        summary = summarise(inp.profile, timeline=False)
    checks += attention_checks(inp.shape, summary, facts, inp.soc)
    if inp.profile is not None:
        checks += profile_checks(inp.profile, facts, inp.soc, checks, summary)
    return checks
