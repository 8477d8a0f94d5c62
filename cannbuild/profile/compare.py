"""Two profiles side by side (issue 28 item 6): per op type the device time before and
after, fused and unfused attention before and after, and the one-line verdict a user
wants after switching FlashAttention on ("unfused chains 4 -> 0, forward attention time
3791 us -> 276 us")."""

from __future__ import annotations

from typing import Any, Dict, List

from msgspec import Struct

from ..decoded import to_plain
from .summary import ProfileSummary


class OpDelta(Struct, frozen=True, kw_only=True, rename={"op_type": "type"}):
    """One op type's row of `--compare --json` (times in us, to the nanosecond)."""

    op_type: str
    before_count: int
    after_count: int
    before_us: float
    after_us: float
    delta_us: float


def attention_side(summary: ProfileSummary) -> Dict[str, Any]:
    """What one profile says about attention: fused calls and time, unfused chains and
    time, attention time (forward: the fused forward calls and the chains, which are
    forward attention), host fallbacks, device total."""
    a = summary.analysis
    fused_us = sum((f.total_us for f in a.fused), 0.0)
    backward = sum((f.total_us for f in a.fused if f.op_type.endswith("Grad")), 0.0)
    forward = fused_us - backward
    return {
        "ranks": max(len(summary.ranks), 1),
        "fused_calls": sum(f.count for f in a.fused),
        "fused_us": round(fused_us, 3),
        "fused_backward_us": round(backward, 3),
        "unfused_chains": a.chain_count,
        "unfused_us": round(a.chain_total_us, 3),
        "attention_us": round(forward + a.chain_total_us, 3),
        "host_fallbacks": sum(1 for o in a.host_ops if o.is_fallback),
        "device_total_us": round(a.total_us, 3),
    }


class ProfileCompare(Struct, frozen=True, kw_only=True):
    before: ProfileSummary
    after: ProfileSummary

    def ops(self) -> List[OpDelta]:
        """Every op type in either profile, the biggest change first."""
        before = {o.op_type: o for o in self.before.analysis.ops}
        after = {o.op_type: o for o in self.after.analysis.ops}
        out = []
        for name in set(before) | set(after):
            b, a = before.get(name), after.get(name)
            b_us, a_us = (b.total_us if b else 0.0), (a.total_us if a else 0.0)
            out.append(
                OpDelta(
                    op_type=name,
                    before_count=b.count if b else 0,
                    after_count=a.count if a else 0,
                    before_us=round(b_us, 3),
                    after_us=round(a_us, 3),
                    delta_us=round(a_us - b_us, 3),
                )
            )
        return sorted(out, key=lambda d: (-abs(d.delta_us), d.op_type))

    def verdict(self) -> str:
        """Forward attention against forward attention: the chains are forward work, so they
        are set beside the fused forward calls; the backward calls are counted apart."""
        b, a = attention_side(self.before), attention_side(self.after)
        text = (
            f"unfused chains {b['unfused_chains']} -> {a['unfused_chains']}, forward attention "
            f"time {b['attention_us']:.0f} us -> {a['attention_us']:.0f} us, fused calls "
            f"{b['fused_calls']} -> {a['fused_calls']}, device time {b['device_total_us']:.0f} us "
            f"-> {a['device_total_us']:.0f} us"
        )
        ranks = {b["ranks"], a["ranks"]} - {1}
        if ranks:
            text += f" (summed over {' -> '.join(str(r) for r in (b['ranks'], a['ranks']))} ranks)"
        if b["host_fallbacks"] or a["host_fallbacks"]:
            text += f", host fallbacks {b['host_fallbacks']} -> {a['host_fallbacks']}"
        return text

    def to_json(self) -> Dict[str, Any]:
        return {
            "before": str(self.before.root),
            "after": str(self.after.root),
            "ops": to_plain(self.ops()),
            "attention": {
                "before": attention_side(self.before),
                "after": attention_side(self.after),
            },
            "verdict": self.verdict(),
        }
