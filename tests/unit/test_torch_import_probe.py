"""doctor imports torch (and torch_npu) in a real child Python and fails, with the fix, when
that import aborts or errors, or when torch is a CUDA build beside torch_npu (issue 30).
Fake packages on the child's PYTHONPATH stand in for the broken installs; the real CPU torch
is tried in tests/integration/test_torch_npu.py (importing it takes seconds)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from cannbuild.host import compat
from cannbuild.host.judge_imports import import_checks
from cannbuild.host.judge_python import python_stack_checks
from cannbuild.host.pystack import TORCH_NPU_CANN_LIBRARIES, PythonStack, device_build
from cannbuild.host.versions import parse_cann_version

from hosttree import clean_env, write

# What PyPI's CUDA torch 2.13.0 beside torch-npu 2.13.0 prints before SIGABRT (issue 30).
DUPLICATED = (
    "c10::ValueError: Duplicated key 'pinned_reserve_segment_size_mb' found in "
    "device-specific configuration parser hook registration"
)
ABORT = f"""
import os, resource, sys
resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
sys.stderr.write("[W compiler_depend.ts:12] Warning: something harmless\\n")
sys.stderr.write({DUPLICATED!r} + "\\n")
sys.stderr.write("Exception raised from registerHook at AllocatorConfig.cpp:211 (most recent call first):\\n")
sys.stderr.write("frame #0: c10::Error::Error() + 0x96 (0x7f in libc10.so)\\n")
sys.stderr.flush()
os.abort()
"""
STACK = PythonStack(python=(3, 11), torch="2.13.0", torch_npu="2.13.0")
TORCH_ONLY = PythonStack(python=(3, 11), torch="2.13.0", torch_npu=None)


def fake_torch(site: Path, init: str, version_py: str = "") -> None:
    write(site / "torch" / "__init__.py", init)
    if version_py:
        write(site / "torch" / "version.py", version_py)


def cuda_torch(site: Path) -> None:
    fake_torch(
        site,
        "from . import version\n__version__ = version.__version__\n",
        "__version__ = '2.13.0+cu130'\ncuda = '13.0'\nhip = None\n",
    )
    write(site / "torch_npu" / "__init__.py", "__version__ = '2.13.0'\n")


def cann_libraries(folder: Path) -> str:
    """Files named like the CANN libraries torch_npu links: enough for doctor to try it."""
    for lib in TORCH_NPU_CANN_LIBRARIES:
        write(folder / lib, "")
    return str(folder)


def child_env(site: Path, **extra: str) -> dict:
    return clean_env(
        PYTHONPATH=os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]), **extra
    )


def row(checks):
    (only,) = [c for c in checks if c.id == "torch.import"]
    return only


def npu_env(tmp_path: Path) -> dict:
    """A torch_npu beside the fake torch, and the CANN libraries it links: where doctor
    imports the pair (a torch alone is judged from its metadata)."""
    write(tmp_path / "site" / "torch_npu" / "__init__.py", "__version__ = '2.13.0'\n")
    return child_env(tmp_path / "site", LD_LIBRARY_PATH=cann_libraries(tmp_path / "lib64"))


def test_a_torch_that_aborts_on_import_fails_doctor_with_its_message_and_the_cpu_fix(tmp_path):
    fake_torch(tmp_path / "site", ABORT)
    check = row(import_checks(STACK, npu_env(tmp_path), "this shell's env"))
    assert check.status == "fail", check
    assert "importing torch 2.13.0 in a fresh Python (this shell's env)" in check.detail
    assert "exited with -6 (SIGABRT)" in check.detail
    assert check.detail.endswith(DUPLICATED)  # the cause, not the frames or the warning
    assert compat.cpu_torch_command("2.13.0") in check.hint
    assert "unreachable" in check.hint and "pip download torch==2.13.0" in check.hint


def test_a_torch_npu_that_aborts_after_torch_imported_is_named(tmp_path):
    site = tmp_path / "site"
    fake_torch(site, "__version__ = '2.13.0+cpu'\n")
    write(site / "torch_npu" / "__init__.py", ABORT)
    env = child_env(site, LD_LIBRARY_PATH=cann_libraries(tmp_path / "lib64"))
    check = row(import_checks(STACK, env, "with the toolkit's set_env.sh"))
    assert check.status == "fail"
    assert "importing torch_npu 2.13.0 (after torch 2.13.0+cpu)" in check.detail
    assert DUPLICATED in check.detail and "SIGABRT" in check.detail
    assert compat.cpu_torch_command("2.13.0") in check.hint


def test_a_python_error_on_import_gives_its_root_cause(tmp_path):
    fake_torch(
        tmp_path / "site",
        "try:\n    import _torch_missing_part\nexcept ImportError as e:\n"
        "    raise RuntimeError('Failed to load torch') from e\n",
    )
    check = row(import_checks(STACK, npu_env(tmp_path), "this shell's env"))
    assert check.status == "fail" and "exited with 1" in check.detail
    assert check.detail.endswith("ModuleNotFoundError: No module named '_torch_missing_part'")


def test_a_cuda_torch_beside_torch_npu_fails_with_the_exact_cpu_command(tmp_path):
    site = tmp_path / "site"
    cuda_torch(site)
    env = child_env(site, LD_LIBRARY_PATH=cann_libraries(tmp_path / "lib64"))
    check = row(import_checks(STACK, env, "with the toolkit's set_env.sh"))
    assert check.status == "fail", check
    assert "torch 2.13.0+cu130 imports as a CUDA 13.0 build beside torch_npu 2.13.0" in check.detail
    assert check.hint.startswith(
        "`pip install torch==2.13.0+cpu --extra-index-url https://download.pytorch.org/whl/cpu`"
    )


def test_the_cuda_build_is_read_from_metadata_too_and_fails_the_torch_npu_row(tmp_path):
    """PyPI's CUDA wheel has no local tag (`2.13.0`); its torch/version.py says cuda."""
    site = tmp_path / "site"
    cuda_torch(site)
    assert device_build("2.13.0", [str(site)]) == "CUDA 13.0"
    assert device_build("2.13.0+cu130", [str(tmp_path / "nothing")]) == "CUDA (+cu130)"
    assert device_build("2.13.0+cpu", [str(tmp_path / "nothing")]) is None
    stack = PythonStack(
        python=(3, 11), torch="2.13.0", torch_npu="2.13.0", torch_device="CUDA 13.0"
    )
    checks = {c.id: c for c in python_stack_checks(stack, None, {})}
    assert checks["torch_npu"].status == "fail"
    assert "is a CUDA 13.0 build beside torch_npu 2.13.0" in checks["torch_npu"].detail
    assert compat.cpu_torch_command("2.13.0") in checks["torch_npu"].hint
    # the child row does not say it a second time
    env = child_env(site, LD_LIBRARY_PATH=cann_libraries(tmp_path / "lib64"))
    assert row(import_checks(stack, env, "this shell's env")).status == "pass"


def test_no_child_is_started_where_torch_npu_could_not_load_or_is_not_installed(tmp_path):
    """Without the CANN libraries torch_npu cannot load, so the pair cannot clash (the
    torch_import row says why); a torch alone is judged from its metadata: no child, no
    seconds spent."""
    site = tmp_path / "site"
    fake_torch(site, ABORT)  # would abort, if it were imported
    write(site / "torch_npu" / "__init__.py", ABORT)
    assert import_checks(STACK, child_env(site, LD_LIBRARY_PATH=""), "this shell's env") == []
    env = child_env(site, LD_LIBRARY_PATH=cann_libraries(tmp_path / "lib64"))
    assert import_checks(TORCH_ONLY, env, "this shell's env") == []
    assert row(import_checks(STACK, env, "this shell's env")).status == "fail"


def test_an_import_that_hangs_is_stopped_at_the_bound(tmp_path):
    fake_torch(tmp_path / "site", "import time\ntime.sleep(30)\n")
    check = row(import_checks(STACK, npu_env(tmp_path), "this shell's env", timeout=0.5))
    assert check.status == "warn"
    assert (
        "importing torch 2.13.0 in a fresh Python (this shell's env) did not finish in 0.5 s"
        in (check.detail)
    )


def test_without_torch_there_is_no_import_row_and_the_torch_hint_names_the_cpu_route():
    none = PythonStack(python=(3, 11), torch=None, torch_npu=None)
    assert import_checks(none, clean_env(), "this shell's env") == []
    hint = {c.id: c for c in python_stack_checks(none, None, {})}["torch"].hint
    assert compat.cpu_torch_command(compat.TESTED_TORCH) in hint


def test_doctor_exits_1_on_pypis_cuda_torch_beside_torch_npu_naming_the_command(tree, tmp_path):
    """The whole route: cannbuild doctor in a fresh interpreter whose path holds PyPI's CUDA
    torch 2.13.0 (no local tag; torch/version.py says CUDA) and a torch_npu that aborts."""
    from test_doctor import a2_host, cli

    site = tmp_path / "site"
    cuda_torch(site)
    write(site / "torch_npu" / "__init__.py", ABORT)
    for name in ("torch-2.13.0", "torch_npu-2.13.0"):
        write(site / f"{name}.dist-info" / "METADATA", f"Name: {name.split('-')[0]}\n")
    tk = a2_host(tree)
    cann_libraries(tk / "lib64")  # what torch_npu links, where the toolkit's set_env.sh points
    for folder in ("opp", "runtime", "compiler"):
        (tk / folder).mkdir(exist_ok=True)
    args = ["doctor", "--json", "--sysroot", str(tree.root), "--workspace", str(tmp_path / "ws")]
    proc = cli(args, child_env(site))
    assert proc.returncode == 1, proc.stderr
    checks = {c["id"]: c for c in json.loads(proc.stdout)["checks"]}
    assert checks["torch_npu"]["status"] == "fail"
    assert (
        "torch 2.13.0 is a CUDA 13.0 build beside torch_npu 2.13.0" in checks["torch_npu"]["detail"]
    )
    assert compat.cpu_torch_command("2.13.0") in checks["torch_npu"]["hint"]
    probe = checks["torch.import"]
    assert probe["status"] == "fail" and DUPLICATED in probe["detail"], probe


# What torch_npu's import prints where its CANN or its NNAL is another release's
# (cann-environment.md 4.3: triton-ascend#326, vllm-ascend#117).
CANN_MISS = "libtorch_npu.so: undefined symbol: MsprofSysCycleTime"
ATB_MISS = "libtorch_npu.so: undefined symbol: _ZN3atb15CreateOperationINS_5infer11LinearParamEEE"


@pytest.mark.parametrize(
    "error, says",
    [
        (CANN_MISS, "torch_npu 2.7.1 was built for another CANN"),
        (ATB_MISS, "source /usr/local/Ascend/nnal/atb/set_env.sh"),
    ],
)
def test_a_torch_npu_missing_a_cann_or_atb_symbol_names_that_pairing_not_torch(
    tmp_path, error, says
):
    site = tmp_path / "site"
    fake_torch(site, "__version__ = '2.7.1+cpu'\n")
    write(site / "torch_npu" / "__init__.py", f"raise ImportError({error!r})\n")
    env = child_env(site, LD_LIBRARY_PATH=cann_libraries(tmp_path / "lib64"))
    stack = PythonStack(python=(3, 11), torch="2.7.1", torch_npu="2.7.1")
    check = row(import_checks(stack, env, "with set_env.sh", parse_cann_version("9.0.0")))
    assert check.status == "fail" and check.detail.endswith(error)
    assert says in check.hint
    assert "pip install torch" not in check.hint  # torch is not what is wrong
    if error == CANN_MISS:  # and which torch_npu is paired with this CANN
        newest = compat.paired_torch_npu("9.0.0")[0][1][0]
        assert f"paired with CANN 9.0.0 ({newest}" in check.hint
