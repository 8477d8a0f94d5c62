"""A check program that cannot be compiled because the disk is full says so (exit 11): it
was validation FAIL, 'fa_check does not compile and link against the package', which
blamed a package nothing was wrong with."""

from __future__ import annotations

from pathlib import Path

import pytest

from cannbuild.errors import StorageError
from cannbuild.validate import capi


def _compiler(folder: Path, said: str) -> dict:
    folder.mkdir()
    gxx = folder / "g++"
    gxx.write_text(
        f"#!/bin/sh\necho '{said}' >&2\necho 'collect2: error: ld returned 1 exit status' >&2\nexit 1\n"
    )
    gxx.chmod(0o755)
    return {"PATH": str(folder), "ASCEND_HOME_PATH": str(folder)}


def test_a_compile_that_runs_out_of_disk_is_a_storage_error(tmp_path: Path) -> None:
    env = _compiler(tmp_path / "bin", "/usr/bin/ld: final link failed: No space left on device")
    with pytest.raises(StorageError) as caught:
        capi.compile_check(tmp_path / "vendor", env, tmp_path / "work")
    said = caught.value.paragraph()
    assert caught.value.exit_code == 11
    assert "fa_check" in said and "No space left on device" in said and "package" not in said


def test_a_compile_that_fails_on_the_package_is_still_a_failed_compile(tmp_path: Path) -> None:
    env = _compiler(tmp_path / "bin", "fa_check.cpp:(.text+0x1): undefined reference to aclnnX")
    compiled = capi.compile_check(tmp_path / "vendor", env, tmp_path / "work")
    assert not compiled.ok and "undefined reference" in compiled.first_error
