import shutil
import subprocess
from pathlib import Path

import pytest

from cannbuild.host.toolkit import host_arch
from cannbuild.validate.elfcheck import check_library

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")


def build_so(path: Path, source: str, *args: str) -> Path:
    src = path.with_suffix(".cpp")
    src.write_text(source)
    subprocess.run(["g++", "-shared", "-fPIC", str(src), "-o", str(path), *args], check=True)
    return path


@pytest.fixture
def libs(tmp_path: Path):
    (tmp_path / "dep").mkdir()
    dep = build_so(tmp_path / "dep" / "libdep.so", 'extern "C" int dep() { return 1; }')
    op = build_so(
        tmp_path / "libcust_opapi.so",
        'extern "C" int dep();\n'
        'extern "C" int aclnnA() { return dep(); }\n'
        'extern "C" __attribute__((visibility("hidden"))) int aclnnHidden() { return 2; }\n',
        f"-L{tmp_path / 'dep'}",
        "-ldep",
    )
    return op, dep


def test_exports_and_dependencies_resolve_under_the_given_env(libs):
    op, dep = libs
    result = check_library(op, ["aclnnA"], {"LD_LIBRARY_PATH": str(dep.parent)}, host_arch())
    assert result.ok, result.problems
    assert result.resolved["libdep.so"] == str(dep)


def test_a_missing_or_hidden_symbol_is_named(libs):
    op, dep = libs
    result = check_library(
        op, ["aclnnA", "aclnnHidden", "aclnnV2"], {"LD_LIBRARY_PATH": str(dep.parent)}, host_arch()
    )
    assert not result.ok
    assert any("does not export aclnnHidden, aclnnV2" in p for p in result.problems)


def test_an_unresolvable_dependency_is_named(libs):
    op, _ = libs
    result = check_library(op, ["aclnnA"], {}, host_arch())
    assert any("libdep.so (needed by libcust_opapi.so) is not found" in p for p in result.problems)


def test_a_missing_library_or_non_elf_fails(tmp_path: Path):
    assert "does not exist" in check_library(tmp_path / "nope.so", [], {}, host_arch()).problems[0]
    junk = tmp_path / "junk.so"
    junk.write_text("not an elf")
    assert "not a readable ELF" in check_library(junk, [], {}, host_arch()).problems[0]
