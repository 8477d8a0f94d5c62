"""torch for the tests' float64 reference, imported the way cannbuild imports it.

A plain `import torch` auto-loads torch_npu where it is installed, and that fails
without CANN libraries on the loader path; cannbuild's reference never loads it.
"""

from typing import Any

import pytest

from cannbuild.validate import cases


def reference_torch() -> Any:
    """torch, or skip the calling module with the reason it cannot be imported."""
    why = cases.why_no_torch()
    if why:
        pytest.skip(why, allow_module_level=True)
    return cases.reference_torch()
