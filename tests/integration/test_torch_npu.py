"""The real torch_npu on the sandbox: it imports against the emulated toolkit (and
doctor says beforehand whether a plain `import torch` will work)."""

import subprocess
import sys

import pytest
from conftest import base_env
from reference import reference_torch

from cannbuild.host.pystack import plain_import_problem, read_python_stack
from cannbuild.host.toolchain import capture_env

reference_torch()
STACK = read_python_stack()
pytestmark = pytest.mark.skipif(
    STACK.torch_npu is None, reason="torch-npu is not installed (no wheel for this platform?)"
)

PROBE = """
import torch, torch_npu
torch.npu.set_device(0)
x = torch.randn(64, 33)
y = x.to("npu:0")
start, end = torch.npu.Event(enable_timing=True), torch.npu.Event(enable_timing=True)
start.record(); z = (y.cpu() * 2).to("npu:0"); end.record(); end.synchronize()
free, total = torch.npu.mem_get_info()
print(torch.npu.device_count(), torch.equal(y.cpu(), x), torch.equal(z.cpu(), x * 2),
      start.elapsed_time(end) >= 0, 0 < free <= total, torch.npu.get_device_name(0))
"""


def toolkit_env(sandbox, base):
    return capture_env(sandbox / "sysroot/usr/local/Ascend/cann/set_env.sh", base).env


@pytest.mark.parametrize("key", ["A2-8.5.0", "A3-9.0.0"])
def test_torch_npu_imports_on_the_sandbox_and_sees_its_npus(sandboxes, key):
    env = toolkit_env(sandboxes[key], base_env())
    assert plain_import_problem(STACK, env) is None  # doctor's prediction ...
    proc = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr  # ... and what really happens
    count, *checks, name = proc.stdout.split()
    assert count == ("8" if key.startswith("A2") else "16") and checks == ["True"] * 4
    assert name == ("Ascend910B3" if key.startswith("A2") else "Ascend910_9392")


def test_without_the_toolkit_env_import_torch_fails_as_doctor_says(sandboxes):
    env = base_env(LD_LIBRARY_PATH="")
    assert "libascendcl.so is not on LD_LIBRARY_PATH" in (plain_import_problem(STACK, env) or "")
    proc = subprocess.run([sys.executable, "-c", "import torch"], env=env, capture_output=True)
    assert proc.returncode != 0
