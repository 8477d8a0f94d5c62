"""The numerical checks a recipe's `[repos.X.validate] check` names, by name.

Each judges one repository's installed package through its aclnn C API against a
float64 (or exact) reference with the tolerance rule of cases.RULE, MERE/MARE beside it
(precision.py): `key` is what its verdict depends on besides the package and the env,
`skipped` the verdict where it cannot run, `run` the C API route (FlashAttention's check id
is `capi`, its cases the report's `cases`; another check's id is its name, its cases in its
details), `after` any route run after the repository's own example (FlashAttention's
torch_npu), `prepare` the work ahead of the package (ahead.py)."""

from __future__ import annotations

from threading import Event
from typing import Dict, List, Protocol, Sequence, Tuple

from ..phases import PhaseSink
from .fa import FlashAttention
from .inputs import FA_CHECK, ValidationInputs
from .opchecks import CHECKS as OP_CHECKS
from .opchecks import OpNumeric
from .verdict import JudgedCase, ValidationCheck


class NumericCheck(Protocol):
    def key(self, inp: ValidationInputs) -> Dict[str, object]: ...

    def skipped(
        self, inp: ValidationInputs, reason: str
    ) -> Tuple[ValidationCheck, Sequence[JudgedCase]]: ...

    def run(
        self, inp: ValidationInputs, phases: PhaseSink
    ) -> Tuple[ValidationCheck, Sequence[JudgedCase]]: ...

    def after(self, inp: ValidationInputs, phases: PhaseSink) -> List[ValidationCheck]: ...

    def prepare(self, case_names: Sequence[str], memo: Dict[str, object], stop: Event) -> None:
        """What `run` would compute that does not depend on the package, into `memo` (on
        the thread ahead.py starts while the build runs); stops early once `stop` is set."""


# ops-transformer's FlashAttention (fa.py), and the sibling repositories' operators
# (opchecks.py: ops-math.segsum, ops-nn.swi_glu, ops-cv.upsample_bilinear2d)
CHECKS: Dict[str, NumericCheck] = {
    FA_CHECK: FlashAttention(),
    **{name: OpNumeric(check) for name, check in OP_CHECKS.items()},
}
