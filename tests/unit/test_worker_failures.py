"""A torch_npu worker that dies (validate's route, bench's, profile --run's) is reported with
how it ended and the first error line of its log, not only `exited with -6` (issue 30).
The workers are real child processes; a torch_npu on their PYTHONPATH that prints the abort
message PyPI's CUDA torch 2.13.0 causes and then aborts stands in for the broken install."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cannbuild.bench import report
from cannbuild.bench.npu_route import NpuWorker
from cannbuild.childlog import error_line, exit_words
from cannbuild.errors import ValidationFailed
from cannbuild.profile import run as profile_run
from cannbuild.profile.shape import AttentionShape
from cannbuild.validate import torchnpu

from hosttree import clean_env, write

DUPLICATED = (
    "Duplicated key 'pinned_reserve_segment_size_mb' found in device-specific configuration "
    "parser hook registration"
)
# libstdc++'s report of a C++ exception nobody caught, then the abort.
ABORT = f"""
import os, resource, sys
resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
sys.stderr.write("/x/torch/__init__.py:12: UserWarning: an unrelated warning\\n")
sys.stderr.write("terminate called after throwing an instance of 'c10::ValueError'\\n")
sys.stderr.write("  what():  {DUPLICATED}\\n")
sys.stderr.write("Exception raised from registerHook at AllocatorConfig.cpp:211 (most recent call first):\\n")
sys.stderr.write("frame #0: c10::Error::Error() + 0x96 (0x7f in libc10.so)\\n")
sys.stderr.flush()
os.abort()
"""
CAUSE = f"c10::ValueError: {DUPLICATED}"


@pytest.fixture
def aborting(tmp_path) -> dict:
    """An env whose torch imports and whose torch_npu aborts at import."""
    site = tmp_path / "site"
    write(site / "torch" / "__init__.py", "__version__ = '2.13.0+cpu'\n")
    write(site / "torch_npu" / "__init__.py", ABORT)
    path = os.pathsep.join(filter(None, (str(site), os.environ.get("PYTHONPATH"))))
    return clean_env(PYTHONPATH=path)


def test_the_error_line_is_the_cause_not_the_frames_or_the_warnings():
    log = (
        "[W1023 12:00:00.0 1 file.cpp:1] Warning: harmless\n"
        "terminate called after throwing an instance of 'c10::ValueError'\n"
        f"  what():  {DUPLICATED}\n"
        "frame #0: c10::Error::Error() + 0x96\n"
    )
    assert error_line(log) == CAUSE
    chained = (
        "Traceback (most recent call last):\n"
        '  File "x.py", line 1, in <module>\n'
        "    raise ImportError('libhccl.so: cannot open shared object file')\n"
        "ImportError: libhccl.so: cannot open shared object file\n\n"
        "The above exception was the direct cause of the following exception:\n\n"
        "Traceback (most recent call last):\n"
        "RuntimeError: Failed to load the backend extension: torch_npu.\n"
    )
    assert error_line(chained) == "ImportError: libhccl.so: cannot open shared object file"
    assert error_line("starting\nstill going\n") == "still going"  # nothing error-like: the last
    assert error_line("") is None
    assert exit_words(-6) == "exited with -6 (SIGABRT)" and exit_words(3) == "exited with 3"


@pytest.mark.xdist_group("torch")  # the worker that imports torch for test_validate_judging
def test_validate_route_says_how_the_worker_died_and_why(aborting, tmp_path):
    from reference import reference_torch

    from cannbuild.validate import cases

    reference_torch()  # the parent computes the float64 references

    outcome = torchnpu.run(
        cases.select(["fp16_bnsd_s1_d64_gqa"]), tmp_path / "lib.so", aborting, tmp_path / "v"
    )
    assert outcome.status == "FAIL"
    assert f"worker failed: exited with -6 (SIGABRT) and no result: {CAUSE}" in outcome.message
    assert outcome.results[0].message == outcome.message


def test_bench_worker_says_how_it_died_and_why_once(aborting, tmp_path):
    worker = NpuWorker(None, tmp_path / "lib.so", aborting, tmp_path / "data")
    try:
        why = worker.unavailable()
    finally:
        worker.close()
    assert why is not None
    assert why.startswith(f"the torch_npu worker exited with -6 (SIGABRT): {CAUSE} (log: ")
    assert "(None)" not in why


def test_profile_run_says_how_the_worker_died_and_why(aborting, tmp_path):
    shape = profile_run.run_shape(AttentionShape())
    work = tmp_path / "ws" / "tmp" / "profile-run"
    work.parent.mkdir(parents=True)
    with pytest.raises(ValidationFailed) as failed:
        profile_run.start(shape, "Level1", 1, aborting, tmp_path / "out", False, work)
    assert f"worker failed: exited with -6 (SIGABRT) and no result: {CAUSE}" in str(
        failed.value.message
    )


def test_a_route_not_run_is_said_once_with_the_shapes_it_spans():
    reason = f"the torch_npu worker exited with -6 (SIGABRT): {CAUSE} (log: /w/torch_npu.log)"
    shapes = [f"N8S{s}D64" for s in (128, 256, 512, 1024)]
    results = [
        {
            "status": "not run",
            "variant": "baseline",
            "impl": "torch_npu",
            "shape": s,
            "reason": reason,
        }
        for s in shapes
    ]
    results += [
        {"status": "timed", "variant": "baseline", "impl": "sdpa", "shape": s, "reason": ""}
        for s in shapes
    ]
    results.append(
        {
            "status": "excluded",
            "variant": "q32",
            "impl": "capi",
            "shape": shapes[0],
            "reason": "bad",
        }
    )
    lines = report.not_timed_lines({"results": results, "shapes": [{"name": s} for s in shapes]})
    assert lines == [
        f"not run: baseline torch_npu on every shape (4): {reason}",
        "not timed: q32 capi on N8S128D64: bad",
    ]


def test_hints_that_install_torch_name_the_version_and_the_cpu_index():
    from cannbuild.host.pystack import PythonStack

    why = torchnpu.unavailable(
        "npu", "", PythonStack(python=(3, 11), torch="2.9.0", torch_npu="2.13.0")
    )
    assert why is not None
    assert (
        "pip install torch==2.13.0+cpu --extra-index-url https://download.pytorch.org/whl/cpu"
        in why
    )
    cuda = PythonStack(python=(3, 11), torch="2.13.0", torch_npu="2.13.0", torch_device="CUDA 13.0")
    assert (
        "`pip install torch==2.13.0+cpu --extra-index-url https://download.pytorch.org/whl/cpu`"
        in torchnpu.cuda_fix(cuda)
    )
    assert Path(torchnpu.__file__).is_file()
