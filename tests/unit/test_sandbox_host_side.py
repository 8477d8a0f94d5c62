"""The sandbox toolkit's host side, laid out from repositories by their packaging data
(cannbuild/sandbox/packaging.py, hostside.py).

The trees are small and real-shaped: hicann/metadef@v9.0.0 scripts/package/metadef/metadef.xml
names its blocks (module/ascend/MetadefInc.xml) whose `<file_info>` install headers under
`$(TARGET_ENV)/include/...`; hicann/ge@v9.0.0 ships register/op_def_registry.h from
inc/graph_metadef/external/; cannmirror/asc-devkit@v9.0.0 stages links with
`file(CREATE_LINK ...)` in install scripts (impl/utils/CMakeLists.txt:35) and links folders
with `install_softlink`; runtime installs libboundscheck's securec.h
(RuntimeInc.xml:129).  Cut down to what each test reads; no upstream code.
"""

from __future__ import annotations

import fcntl
import os
import queue
import threading
from pathlib import Path
from typing import List

import pytest

from cannbuild.errors import SandboxError
from cannbuild.host.contents import wall_of
from cannbuild.sandbox.hostside import (
    LAYOUT_LOCK,
    RECORD,
    laid_out_for,
    lay_out_host_side,
    read_record,
)
from cannbuild.sandbox.packaging import RepoIndex, placements

from hosttree import executable, files

ARCH = "x86_64"

METADEF_XML = """<?xml version="1.0" encoding="UTF-8"?>
<config name="metadef" dst_path="metadef">
    <generate_info value="metadef_version.h" dst_path="share/info/metadef"
                   install_path="$(TARGET_ENV)/include/version">
       <METADEF_VERSION>$(ASCEND_VER)</METADEF_VERSION>
    </generate_info>
    <block_info dst_path="" block_conf_path="ascend">
        <block name="MetadefInc"/>
    </block_info>
</config>
"""
METADEF_INC = """<?xml version="1.0" encoding="UTF-8"?>
<block name="MetadefInc">
    <dir_info value="MetadefInc">
        <path value="$(TARGET_ENV)/include" install_softlink="include"/>
    </dir_info>
    <file_info value="include" dst_path="include/graph" install_path="$(TARGET_ENV)/include/graph">
        <file value="types.h"/>
        <file value="tensor.h"/>
    </file_info>
    <file_info value="include" dst_path="include/exe_graph/runtime" install_path="$(TARGET_ENV)/include/exe_graph/runtime">
        <file value="tiling_context.h"/>
    </file_info>
    <file_info value="x" dst_path="x" install_path="$(OTHER_ENV)/include">
        <file value="unknown.h"/>
    </file_info>
    <file_info value="lib" dst_path="lib" install_path="$(TARGET_ENV)/lib64">
        <file value="libmetadef.so"/>
    </file_info>
</block>
"""


@pytest.fixture
def metadef(tmp_path: Path) -> Path:
    return files(
        tmp_path / "metadef",
        {
            "scripts/package/metadef/metadef.xml": METADEF_XML,
            "scripts/package/module/ascend/MetadefInc.xml": METADEF_INC,
            # the installed graph/types.h is inc/external's, not the internal inc/graph one
            "inc/external/graph/types.h": "// external types\n",
            "inc/graph/utils/types.h": "// internal\n",
            "inc/external/graph/tensor.h": "// tensor\n",
            "inc/external/exe_graph/runtime/tiling_context.h": "// tiling context\n",
            "tests/ut/graph/types.h": "// a test's copy is never installed\n",
        },
    )


def test_each_installed_header_is_found_by_the_longest_tail_of_its_path(metadef):
    entries = placements(RepoIndex("metadef", metadef), ARCH, {"ASCEND_VER": "9.0.0"})
    files = {e.installed: e.source for e in entries if e.kind == "file"}
    assert files == {
        "x86_64-linux/include/graph/types.h": "inc/external/graph/types.h",
        "x86_64-linux/include/graph/tensor.h": "inc/external/graph/tensor.h",
        "x86_64-linux/include/exe_graph/runtime/tiling_context.h": (
            "inc/external/exe_graph/runtime/tiling_context.h"
        ),
    }
    # a library has no source: it is left out, never invented; an unknown $(VAR) is skipped
    assert not any("libmetadef" in e.installed or "unknown" in e.installed for e in entries)
    links = {e.installed: e.source for e in entries if e.kind == "link"}
    assert links == {"include": "x86_64-linux/include"}
    (generated,) = [e for e in entries if e.kind == "generated"]
    assert generated.installed == "x86_64-linux/include/version/metadef_version.h"
    assert '#define METADEF_VERSION "9.0.0"' in generated.text
    assert generated.xml.endswith("metadef.xml:3")


def test_links_the_install_scripts_stage_are_installed_with_their_folder(tmp_path):
    """asc-devkit stages asc/include/tiling/platform/platform_ascendc.h as a link with
    file(CREATE_LINK) (impl/utils/CMakeLists.txt:35) and its XML installs the folder
    asc/include/tiling, which include/tiling links to."""
    repo = files(
        tmp_path / "asc-devkit",
        {
            "scripts/package/asc-devkit/asc-devkit.xml": """<config name="asc-devkit">
    <dir_info value="x">
        <path value="$(TARGET_ENV)/asc/include/tiling" install_softlink="$(TARGET_ENV)/include/tiling"/>
    </dir_info>
    <file_info dst_path="$(TARGET_ENV)/asc/include" install_path="$(TARGET_ENV)/asc/include">
        <file value="tiling"/>
        <file value="utils"/>
    </file_info>
</config>
""",
            "impl/utils/CMakeLists.txt": 'install(CODE "file(CREATE_LINK '
            "../../utils/tiling/platform/platform_ascendc.h "
            "${CMAKE_INSTALL_PREFIX}/${INSTALL_LIBRARY_DIR}/asc/include/tiling/platform/"
            'platform_ascendc.h SYMBOLIC)")\n',
            "include/utils/tiling/platform/platform_ascendc.h": "// platform\n",
            "impl/adv_api/tiling/other.h": "// a folder of another name's tail\n",
        },
    )
    entries = placements(RepoIndex("asc-devkit", repo), ARCH, {})
    by_path = {e.installed: (e.kind, e.source) for e in entries}
    assert by_path["x86_64-linux/asc/include/tiling/platform/platform_ascendc.h"] == (
        "link",
        "../../utils/tiling/platform/platform_ascendc.h",
    )
    assert by_path["x86_64-linux/include/tiling"] == ("link", "../asc/include/tiling")
    # `utils` is one folder of that name: taken; `tiling` names two, and one name is not enough
    assert by_path["x86_64-linux/asc/include/utils"] == ("dir", "include/utils")
    assert "x86_64-linux/asc/include/tiling" not in by_path


def host_side(tmp_path: Path, metadef: Path, commit: str = "1" * 40):
    home = tmp_path / "tk"
    (home / "x86_64-linux").mkdir(parents=True, exist_ok=True)
    securec = files(tmp_path / "libboundscheck", {"include/securec.h": "// securec\n"})
    runtime = files(
        tmp_path / "runtime",
        {
            "scripts/package/runtime/runtime.xml": """<config name="runtime">
    <file_info dst_path="include" install_path="$(TARGET_ENV)/include">
        <file value="securec.h"/>
    </file_info>
</config>
"""
        },
    )
    checkouts = {
        "metadef": (metadef, commit),
        "runtime": (runtime, "2" * 40),
        "libboundscheck": (securec, "3" * 40),
    }
    sandbox = tmp_path / "sandbox"
    sandbox.mkdir(exist_ok=True)
    return sandbox, home, lay_out_host_side(sandbox, home, ARCH, "9.0.0", checkouts)


def test_the_host_side_is_laid_out_once_per_commit_and_a_new_one_replaces_it(tmp_path, metadef):
    sandbox, home, laid = host_side(tmp_path, metadef)
    include = home / "x86_64-linux/include"
    assert laid.laid_out and (include / "graph/types.h").read_text() == "// external types\n"
    # runtime installs the third-party securec.h, found in libboundscheck's checkout
    assert (include / "securec.h").read_text() == "// securec\n"
    assert os.readlink(home / "include") == "x86_64-linux/include"
    assert laid.record.counts == {"metadef": 3, "runtime": 1}
    assert laid_out_for(sandbox, laid.record.commits)
    # the same commits: nothing to do
    _, _, again = host_side(tmp_path, metadef)
    assert not again.laid_out
    # a new metadef commit without tensor.h: what the old one wrote goes first
    (metadef / "inc/external/graph/tensor.h").unlink()
    _, _, moved = host_side(tmp_path, metadef, commit="4" * 40)
    assert moved.laid_out and not (include / "graph/tensor.h").exists()
    assert (include / "graph/types.h").is_file()
    assert not laid_out_for(sandbox, laid.record.commits)


def test_a_second_run_on_the_same_sandbox_waits_for_the_layout_and_finds_it_done(tmp_path, metadef):
    """Two workspaces may share a sandbox: the run that comes second while the first lays
    the host side out waits for it instead of writing the same files beside it."""
    sandbox = tmp_path / "sandbox"
    sandbox.mkdir()
    # the first run, holding the lock as it does while it lays out (a lock of its own
    # open file, so this thread's flock is another holder)
    with open(sandbox / LAYOUT_LOCK, "w") as first:
        fcntl.flock(first, fcntl.LOCK_EX)
        second: queue.Queue[object] = queue.Queue()
        worker = threading.Thread(target=lambda: second.put(host_side(tmp_path, metadef)[2]))
        worker.start()
        worker.join(0.5)
        assert worker.is_alive() and not (sandbox / RECORD).exists()
        fcntl.flock(first, fcntl.LOCK_UN)
    worker.join(30)
    laid = second.get_nowait()
    assert laid.laid_out and laid.record.complete
    # and a third, after it, finds it done
    assert not host_side(tmp_path, metadef)[2].laid_out


def test_an_interrupted_layout_is_redone(tmp_path, metadef):
    sandbox, _, _ = host_side(tmp_path, metadef)
    record = (sandbox / RECORD).read_text().replace('"complete": true', '"complete": false')
    (sandbox / RECORD).write_text(record)
    assert read_record(sandbox) is not None and not read_record(sandbox).complete
    _, _, again = host_side(tmp_path, metadef)
    assert again.laid_out and again.record.complete


def test_a_package_that_installs_outside_the_toolkit_is_refused_naming_it(tmp_path, metadef):
    (metadef / "scripts/package/module/ascend/MetadefInc.xml").write_text(
        METADEF_INC.replace(
            'install_path="$(TARGET_ENV)/include/graph"', 'install_path="../../etc"'
        )
    )
    (tmp_path / "etc").mkdir()
    with pytest.raises(SandboxError) as err:
        host_side(tmp_path, metadef)
    assert "outside the sandbox toolkit" in str(err.value) and "../../etc" in str(err.value)
    assert list((tmp_path / "etc").iterdir()) == []


def test_a_link_in_a_checkout_is_not_followed_out_of_it(tmp_path, metadef):
    secret = tmp_path / "secret.h"
    secret.write_text("// someone's file\n")
    (metadef / "inc/external/graph/tensor.h").unlink()
    (metadef / "inc/external/graph/tensor.h").symlink_to(secret)
    _, home, _ = host_side(tmp_path, metadef)
    assert not (home / "x86_64-linux/include/graph/tensor.h").exists()


def test_without_opdef_sources_the_op_build_wall_stays_and_is_put_back(tmp_path, metadef):
    """The stand-in repositories hold no OpDef implementation: no op_build is compiled
    (sandbox/opbuild.py), and where a host side of other commits had replaced the wall
    and was removed, the wall is put back, so the build still stops there naming it."""
    _, home, laid = host_side(tmp_path, metadef)
    assert not any("op_build" in path for path in laid.record.written)
    assert wall_of(home / "tools/opbuild/op_build")[0] == "op_build"
    assert (home / "x86_64-linux/lib64/libregister.so").read_bytes() == b""


def test_a_tool_the_package_installs_with_an_exec_mode_is_laid_out_executable(tmp_path):
    """asc-devkit keeps tools/build/asc_opc/asc_opc as 100644 in git and installs it with
    install_mod="550" (scripts/package/asc-devkit/asc-devkit.xml:165): the kernel build
    runs it, so a copy without the x bit is `Permission denied`."""
    repo = files(
        tmp_path / "asc-devkit",
        {
            "scripts/package/asc-devkit/asc-devkit.xml": """<config name="asc-devkit">
    <file_info value="asc_opc" src_path="tools/build/asc_opc" dst_path="$(TARGET_ENV)/bin" install_path="$(TARGET_ENV)/bin" install_mod="550">
        <file value="asc_opc"/>
    </file_info>
    <file_info dst_path="$(TARGET_ENV)/include" install_path="$(TARGET_ENV)/include" install_mod="440">
        <file value="kernel_operator.h"/>
    </file_info>
</config>
""",
            "tools/build/asc_opc/asc_opc": "#!/bin/bash\n",
            "include/kernel_operator.h": "// header\n",
        },
    )
    home = tmp_path / "tk"
    sandbox = tmp_path / "sandbox"
    sandbox.mkdir()
    lay_out_host_side(sandbox, home, ARCH, "9.0.0", {"asc-devkit": (repo, "5" * 40)})
    assert os.access(home / "x86_64-linux/bin/asc_opc", os.X_OK)
    assert not os.access(home / "x86_64-linux/include/kernel_operator.h", os.X_OK)


def test_a_failing_compile_of_the_opdef_sources_names_the_unit_and_what_the_compiler_said(
    tmp_path, monkeypatch
):
    """op_build's compilers run through cannbuild/proc.py like every other child: a unit
    that does not compile is a SandboxError naming it and ending with the compiler's own
    message (read from the child's stderr), not a traceback."""
    from cannbuild.sandbox.opbuild import build_op_build

    metadef = tmp_path / "metadef"
    files(metadef, {"base/asc/opdef/op_def.cc": "", "base/type/ascend_string_impl.cc": ""})
    compiler = executable(
        tmp_path / "c++", "#!/bin/sh\necho 'op_def.cc:1: error: boom' >&2\nexit 3\n"
    )
    monkeypatch.setenv("CXX", str(compiler))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))  # not the user's cache
    with pytest.raises(SandboxError) as raised:
        build_op_build(tmp_path / "tk", ARCH, {"metadef": metadef}, {"metadef": "0" * 40})
    message = raised.value.message
    assert "compiling metadef's OpDef sources" in message and "op_def.cc" in message
    assert message.endswith("failed (exit 3): op_def.cc:1: error: boom")


def test_a_layout_interrupted_after_its_links_records_them_as_an_uninterrupted_one(
    tmp_path, metadef, monkeypatch
):
    """SIGTERM during the real repos' layout, then the same command: the redo took the
    links the interrupted one had made for the emulated toolkit's own and left them out of
    the record (43 of 3398 paths on ops-transformer v9.0.0), so a later commit's layout
    would never remove them."""
    whole = host_side(tmp_path / "whole", metadef)[2].record.written
    assert "include" in whole
    from cannbuild.sandbox import opbuild

    def stop(*_args: object) -> List[str]:
        raise KeyboardInterrupt

    with monkeypatch.context() as patched:
        patched.setattr(opbuild, "build_op_build", stop)
        with pytest.raises(KeyboardInterrupt):
            host_side(tmp_path, metadef)
    assert os.path.islink(tmp_path / "tk" / "include")  # made before the stop
    again = host_side(tmp_path, metadef)[2]
    assert again.laid_out and sorted(again.record.written) == sorted(whole)
