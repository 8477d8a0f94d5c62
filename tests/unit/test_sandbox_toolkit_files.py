"""The sandbox toolkit's headers and libraries: one list, each declared, stub or emulated
(cannbuild/sandbox/toolkit_files.py), covering what the real host code includes."""

from pathlib import Path
from typing import Set

from cannbuild.resources import data_dir
from cannbuild.sandbox.toolkit_files import (
    DECLARED,
    EMPTY_ARCHIVE,
    EMULATED,
    INCLUDE,
    STUB,
    lay_out,
    stand_in_repo_files,
    toolkit_files,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "derived"
# the folders the real v9.0.0 cmake puts these headers' roots on the include path as: the
# include folder (Findmetadef/Findplatform/Findsecurec), include/aclnn
# (Findnnopbase.cmake's NNOPBASE_OPDEV_INC_DIR), include/experiment/runtime
# (Findruntime.cmake's RUNTIME_INC_DIR) and include/toolchain (Finddlog.cmake)
FOLDERS = ("", "aclnn/", "experiment/runtime/", "toolchain/")


def headers_laid_out() -> Set[str]:
    """Each header's path under <arch>-linux/include, copied folders' files included."""
    kernels = data_dir("kernels")
    out: Set[str] = set()
    for item in toolkit_files():
        if not item.path.startswith(INCLUDE):
            continue
        rel = item.path[len(INCLUDE) :]
        source = kernels / item.copy if item.copy else None
        if source is not None and source.is_dir():
            out |= {f"{rel}/{p.relative_to(source).as_posix()}" for p in source.rglob("*.h")}
        else:
            out.add(rel)
    return out


def test_every_entry_says_what_it_is_and_a_copied_one_exists():
    kernels = data_dir("kernels")
    assert len({i.path for i in toolkit_files()}) == len(toolkit_files())
    for item in toolkit_files():
        assert item.kind in (DECLARED, STUB, EMULATED) and item.package and item.what
        if item.kind == DECLARED:
            assert item.copy and (kernels / item.copy).exists(), item
        if item.kind == STUB:
            assert not item.copy, item


def test_the_sandbox_holds_every_header_the_real_host_code_includes():
    real = [
        line.split("\t")[0]
        for line in (FIXTURES / "ops-transformer-v9.0.0-fa-headers.tsv").read_text().splitlines()
        if line and not line.startswith("#")
    ]
    assert len(real) == 37
    laid_out = headers_laid_out()
    missing = [h for h in real if not any(f"{folder}{h}" in laid_out for folder in FOLDERS)]
    assert missing == []


def emulation(tmp_path: Path) -> Path:
    """A folder with a file for each emulated library, as the emulation's build makes."""
    emu = tmp_path / "emu"
    emu.mkdir()
    for item in toolkit_files():
        if item.kind == EMULATED and not item.path.startswith(INCLUDE):
            (emu / Path(item.path).name).write_bytes(b"\x7fELF emulated")
    return emu


def test_stubs_are_empty_and_libraries_link_nothing_in(tmp_path):
    emu = emulation(tmp_path)
    lay_out(tmp_path / "tk", "x86_64", emu, opbase_in_toolkit=False, host_side_repos=False)
    lib64 = tmp_path / "tk/x86_64-linux/lib64"
    assert (lib64 / "libc_sec.a").read_bytes() == EMPTY_ARCHIVE
    assert (lib64 / "libregister.so").read_bytes() == b""
    assert (lib64 / "libascendcl.so").read_bytes() == b"\x7fELF emulated"
    assert not (lib64 / "libops_base.so").exists()  # only where the toolkit holds opbase
    include = tmp_path / "tk/x86_64-linux/include"
    assert (
        "stub of register/op_def_registry.h" in (include / "register/op_def_registry.h").read_text()
    )
    assert "memcpy_s" in (include / "securec.h").read_text()
    assert (include / "aclnn/opdev/op_errno.h").is_file()  # the declared emulation's folder


def test_from_8_5_an_open_repository_s_headers_come_from_its_stand_in_repository(tmp_path):
    """Where the release's host side comes from repositories, the sandbox lays none of the
    headers they ship; each stand-in repository holds them at the repository's own path with
    a packaging XML that installs them where the toolkit has them (hostside.py reads it)."""
    emu = emulation(tmp_path)
    lay_out(tmp_path / "tk", "x86_64", emu, opbase_in_toolkit=True, host_side_repos=True)
    include = tmp_path / "tk/x86_64-linux/include"
    assert not (include / "register/op_def_registry.h").exists()
    assert not (include / "securec.h").exists() and not (include / "acl").exists()
    assert (include / "emu").is_dir()  # the emulation's own interface stays
    shipped = {i.path[len(INCLUDE) :] for i in toolkit_files() if i.repo}
    placed = set()
    for repo, folder in (
        ("ge", "inc/graph_metadef/external/"),
        ("metadef", "inc/external/"),
        ("runtime", "include/external/"),
        ("asc-devkit", "include/"),
        ("opbase", "include/nnopbase/"),
        ("libboundscheck", "include/"),
    ):
        files = stand_in_repo_files(repo, register_in_ge=True)
        placed |= {k[len(folder) :] for k in files if k.startswith(folder)}
        if repo != "libboundscheck":
            assert f"scripts/package/{repo}/{repo}.xml" in files
    # every header an open repository ships is in one stand-in repository (folders expanded)
    assert all(any(p == h or p.startswith(h + "/") for p in placed) for h in shipped)
    # 9.1 moved the operator definition headers from ge to metadef
    assert "inc/graph_metadef/external/register/op_def_registry.h" in stand_in_repo_files(
        "ge", register_in_ge=True
    )
    assert "inc/external/register/op_def_registry.h" in stand_in_repo_files(
        "metadef", register_in_ge=False
    )


def test_the_sandbox_sources_key_is_kept_with_the_mark_of_its_files(tmp_path):
    """Hashing every source file of the sandbox was 10 ms of each run on it: the key is
    kept in the sandbox folder with a mark of the files' names, sizes and times, taken
    while the mark matches and worked out again when it does not."""
    import json
    import os

    from cannbuild.sandbox.create import KEY_MEMO, _stat_mark, sources_key
    from cannbuild.sandbox.spec import INFO_FILE, SandboxSpec

    spec = SandboxSpec(dir=tmp_path / "sb", variant="A2", cann="8.5.0")
    spec.dir.mkdir()
    key = sources_key(spec, "/usr/bin/c++")
    assert not (spec.dir / KEY_MEMO).exists()  # a folder that is no sandbox keeps nothing
    (spec.dir / INFO_FILE).write_text("{}")
    assert sources_key(spec, "/usr/bin/c++") == key
    kept = json.loads((spec.dir / KEY_MEMO).read_text())
    (spec.dir / KEY_MEMO).write_text(json.dumps({**kept, "key": "kept"}))
    assert sources_key(spec, "/usr/bin/c++") == "kept"  # the mark matches: taken as kept
    assert sources_key(spec, "/usr/bin/clang++") not in (key, "kept")  # another compiler
    (spec.dir / KEY_MEMO).write_text(json.dumps({**kept, "mark": "another", "key": "kept"}))
    assert sources_key(spec, "/usr/bin/c++") == key
    # the mark sees a file that changes, even at the same size
    root = tmp_path / "src"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "a.cpp").write_text("int a;\n")
    before = _stat_mark([root])
    os.utime(root / "sub" / "a.cpp", ns=(0, 10**18))
    assert _stat_mark([root]) != before
