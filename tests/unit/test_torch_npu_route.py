"""When the torch_npu route runs, and when it is skipped with the fix."""

from cannbuild.host.pystack import PythonStack
from cannbuild.validate import torchnpu


def test_the_route_is_skipped_with_the_fix_where_torch_npu_is_not_installed():
    why = torchnpu.unavailable(
        "sandbox", "", PythonStack(python=(3, 11), torch="2.13.0+cpu", torch_npu=None)
    )
    assert why is not None and "torch_npu is not installed" in why
    assert "pip install torch-npu==2.13.0" in why
    # bench and profile --run say it too: not in validation's words ("is not checked")
    assert "checked" not in why


def test_the_route_is_skipped_when_torch_npu_does_not_match_torch():
    why = torchnpu.unavailable(
        "npu", "", PythonStack(python=(3, 11), torch="2.9.0", torch_npu="2.13.0")
    )
    assert why is not None and "pip install torch==2.13.0" in why


def test_the_route_runs_on_the_sandbox_when_torch_and_torch_npu_match():
    assert (
        torchnpu.unavailable(
            "sandbox", "", PythonStack(python=(3, 11), torch="2.13.0+cpu", torch_npu="2.13.0")
        )
        is None
    )


def test_without_a_device_the_route_gives_the_no_device_reason():
    why = torchnpu.unavailable(
        None, "no NPU is visible", PythonStack(python=(3, 11), torch="2.13.0", torch_npu="2.13.0")
    )
    assert why == "no NPU is visible"
