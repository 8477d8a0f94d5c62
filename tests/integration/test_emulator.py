"""The emulated ACL runtime and the stand-in FlashAttention operator, through the public API."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from reference import reference_torch

from cannbuild.validate import capi, casefiles, cases

reference_torch()
pytestmark = pytest.mark.xdist_group("emulator")  # one xdist worker compiles the check

# fmt: off
EXTRA_CASES = (
    cases.Case(name="fp32_sbh_s127_d64", dtype="fp32", layout="SBH", B=2, N1=2, N2=2, S=127, D=64, causal=False),
    cases.Case(name="fp16_bsnd_s513_d128_gqa_causal", dtype="fp16", layout="BSND", B=1, N1=4, N2=2, S=513, D=128, causal=True),
    cases.Case(name="bf16_sbh_s1_d64_gqa", dtype="bf16", layout="SBH", B=1, N1=4, N2=1, S=1, D=64, causal=False),
    cases.Case(name="bf16_bsnd_s127_d128_causal", dtype="bf16", layout="BSND", B=2, N1=2, N2=2, S=127, D=128, causal=True),
    cases.Case(name="fp16_sbh_s513_d64_causal", dtype="fp16", layout="SBH", B=1, N1=2, N2=2, S=513, D=64, causal=True),
    cases.Case(name="fp32_bsnd_s1_d64_gqa", dtype="fp32", layout="BSND", B=1, N1=8, N2=2, S=1, D=64, causal=False),
    cases.Case(name="fp32_bnsd_s127_d128_gqa8", dtype="fp32", layout="BNSD", B=1, N1=8, N2=1, S=127, D=128, causal=True),
)
# fmt: on


def installed_env(installed):
    from cannbuild.host.toolchain import capture_env

    sandbox = installed.sandbox
    toolkit_env = capture_env(
        sandbox / "sysroot/usr/local/Ascend/cann/set_env.sh", installed.env()
    ).env
    vendor = installed.ws / "opp/vendors/custom_transformer"
    return vendor, capture_env(vendor / "bin/set_env.bash", toolkit_env).env


@pytest.fixture(scope="module")
def compiled(installed, tmp_path_factory):
    vendor, env = installed_env(installed)
    result = capi.compile_check(vendor, env, tmp_path_factory.mktemp("fa_check"))
    assert result.ok, result.output
    return result, env


@pytest.mark.parametrize("case", cases.CASES + EXTRA_CASES, ids=lambda c: c.name)
def test_the_operator_matches_a_float64_reference(compiled, tmp_path, case):
    compiled, env = compiled
    tensors = casefiles.write_inputs(case, tmp_path)
    manifest = tmp_path / "m.txt"
    manifest.write_text(casefiles.manifest_line(case, tmp_path) + "\n")
    runs, output, code = capi.run_cases(compiled.binary, manifest, env, [case.name])
    assert code == 0 and runs[case.name].ok, output
    result = casefiles.judge_files(case, tensors, tmp_path, runs[case.name].kernel_ms)
    assert result.status == "PASS", result.message


@pytest.fixture(scope="module")
def probes(installed, tmp_path_factory):
    """programs/fa_errors.cpp, compiled against the package and run: its line per probe."""
    vendor, env = installed_env(installed)
    binary = tmp_path_factory.mktemp("fa_errors") / "fa_errors"
    argv = capi.compile_command(vendor, env["ASCEND_HOME_PATH"], binary, shutil.which("g++"))
    argv[3] = str(Path(__file__).parent / "programs" / "fa_errors.cpp")
    subprocess.run(argv, check=True, env=env)
    out = subprocess.run([str(binary)], capture_output=True, text=True, env=env).stdout
    return {line.split(" ", 1)[0]: line for line in out.splitlines()}


def test_error_codes_and_messages_are_the_real_ones(probes):
    lines = probes
    assert lines["ok"].startswith("ok 0") and lines["ok-run"] == "ok-run 0"
    for tagged in ("nchw-format", "ncl-format"):  # what torch_npu sends
        assert (
            lines[tagged].startswith(f"{tagged} 0") and lines[f"{tagged}-run"] == f"{tagged}-run 0"
        )
    assert lines["null-query"].startswith("null-query 161001")
    assert "The query cannot be nullptr." in lines["null-query"]
    assert lines["null-out"].startswith("null-out 161001") and "attentionOut" in lines["null-out"]
    for probe, words in (
        ("bad-layout", "inputLayout XYZW is invalid"),
        ("tnd-layout", "only supported by the VarLen APIs"),
        ("gqa-not-multiple", "n1Size 4 must be a multiple of n2Size 3"),
        ("headnum-mismatch", "headNum 3"),
        ("out-dtype", "attentionOut dtype"),
        ("host-memory", "not device memory"),
        ("nz-format", "query:[FRACTAL_NZ]"),
    ):
        assert lines[probe].startswith(f"{probe} 161002"), lines[probe]
        assert words in lines[probe]


def test_the_varlen_apis_and_the_context_calls_answer_like_the_real_ones(probes):
    """aclnnFlashAttentionVarLenScore(V4) take TND with cumulative lengths, and reject what
    the real op_api rejects; the VarLen example's context calls work (issue 29 item 4)."""
    lines = probes
    assert lines["context"] == "context 0 0 0 1"
    assert lines["context-destroy"].startswith("context-destroy 0 100000 ")  # once only
    assert "was not created by aclrtCreateContext" in lines["context-destroy"]
    for ok in ("varlen-v4", "varlen-v1", "varlen-v1-tn8", "varlen-trailing-zero"):
        assert lines[ok].startswith(f"{ok} 0") and lines[f"{ok}-run"] == f"{ok}-run 0", lines[ok]
    for probe, words in (
        ("varlen-bsh", "Layout BSH is not TND"),
        ("varlen-lowercase", "Layout tnd is not TND"),  # strcmp, as the real VarLen APIs
        ("varlen-count", "got 2 and 1 values"),
        ("varlen-not-cumulative", "actualSeqQLen[1] = 5 < 11"),
        ("varlen-beyond-t", "actualSeqQLen ends at 20, beyond T = 16"),
        ("varlen-stat-shape", "softmaxMax must be FLOAT [16,4,8] (softmaxOutLayout same_as_input)"),
        ("varlen-softmax-layout", "softmaxOutLayout TND is invalid"),
    ):
        assert lines[probe].startswith(f"{probe} 161002"), lines[probe]
        assert words in lines[probe]


def test_memory_stays_linear_in_sequence_length(compiled, tmp_path):
    """No S x S buffer: at S=8192 an S x S fp32 matrix per head would be 256 MiB."""
    compiled, env = compiled
    case = cases.Case(
        name="fp32_long", dtype="fp32", layout="BNSD", B=1, N1=1, N2=1, S=8192, D=64, causal=False
    )
    casefiles.write_inputs(case, tmp_path)
    manifest = tmp_path / "m.txt"
    manifest.write_text(casefiles.manifest_line(case, tmp_path) + "\n")
    probe = (
        "import resource, subprocess, sys; "
        "p = subprocess.run(sys.argv[1:], capture_output=True, text=True); "
        "print(p.stdout); print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
    )
    proc = subprocess.run(
        [sys.executable, "-c", probe, str(compiled.binary), str(manifest)],
        capture_output=True,
        text=True,
        env=env,
    )
    assert "CASE fp32_long OK" in proc.stdout
    peak_kib = int(proc.stdout.strip().splitlines()[-1])
    assert peak_kib < 128 * 1024, f"peak RSS {peak_kib} KiB suggests an S x S buffer"


ENTRY_PROBE = """
import ctypes, sys
acl = ctypes.CDLL(sys.argv[1])
acl.aclGetRecentErrMsg.restype = ctypes.c_char_p
print(acl.rtKernelLaunch(), acl.aclGetRecentErrMsg().decode())
print(acl.aclmdlInitDump())
"""


def test_every_listed_entry_point_is_exported_and_none_fakes_a_device_feature(sandboxes):
    """kernels/emu/runtime/entry_points.def is the one list of what torch_npu needs beyond
    the operator-program subset: each name is exported; UNSUPPORTED ones say so."""
    lib64 = sandboxes["A2-8.5.0"] / "sysroot/usr/local/Ascend/cann/lib64"
    listed = Path(capi.fa_check_source()).parents[1] / "emu" / "runtime" / "entry_points.def"
    names = {}
    for line in listed.read_text().splitlines():
        if line.startswith("EMU_"):
            kind, name = line.rstrip(")").split("(")
            names[name] = kind
    exported = set()
    for lib in ("libascendcl.so", "libacl_op_compiler.so"):
        nm = subprocess.run(
            ["nm", "-D", "--defined-only", str(lib64 / lib)], capture_output=True, text=True
        )
        exported |= {line.split()[-1] for line in nm.stdout.splitlines()}
    assert len(names) > 90 and not set(names) - exported
    for lib in ("libhccl.so", "libge_runner.so", "libgraph.so", "libacl_tdt_channel.so"):
        assert (lib64 / lib).is_file()
    out = subprocess.run(
        [sys.executable, "-c", ENTRY_PROBE, str(lib64 / "libascendcl.so")],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    assert names["rtKernelLaunch"] == "EMU_UNSUPPORTED" and out[0].startswith("207000 ")
    assert "rtKernelLaunch is not supported by the cannbuild sandbox" in out[0]
    assert names["aclmdlInitDump"] == "EMU_INERT" and out[1] == "0"
