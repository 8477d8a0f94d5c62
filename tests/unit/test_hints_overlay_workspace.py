import os
from pathlib import Path

import pytest

from cannbuild.build.overlay import build_overlay, overlay_env, staged_root
from cannbuild.build.plan import explain_change
from cannbuild.errors import WorkspaceBusy
from cannbuild.hints import match_hint
from cannbuild.locks import WorkspaceLock
from cannbuild.workspace import Workspace, write_atomic


@pytest.mark.parametrize(
    "line,expected",
    [
        (
            "[2026-01-01 00:00:00] Error: bisheng compilation tool not found, Please check",
            "bisheng on PATH",
        ),
        (
            "Error: Please set the toolkit package installation directory through parameter -p",
            "--cann-path",
        ),
        ("[ERROR] The input soc ascend999 is not supported.", "does not build for that --soc"),
        (
            "check_build_dependencies.py: ERROR: /x/share/info/hcomm/version.info does not exist in read_pkg_version!",
            "no hcomm package",
        ),
        ("[ops_custom] [2026] [ERROR] env ASCEND_OPP_PATH no exist", "--install-path"),
        ("/bin/sh: gawk: command not found", "apt install gawk"),
        (
            "CMake Error: Failed to download https://x/y.tar.gz: 6",
            "tried to download https://x/y.tar.gz",
        ),
        ("x.cpp:3:1: error: expected ';'", "x.cpp:3:1: error: expected ';'"),
        # what the real ops-transformer configure/compile prints on a toolkit without them
        ("  Could NOT find dlog (missing: dlog_TRANSFORMER_INCLUDE_DIR)", "found no dlog headers"),
        ("  Could NOT find platform (missing: PLATFORM_INC_DIR)", "Findplatform.cmake"),
        (
            "op_host/x.cpp:12:10: fatal error: register/op_def_registry.h: No such file or directory",
            "toolkit header register/op_def_registry.h",
        ),
        # the row doctor would have failed on before the build (build/derived.py)
        (
            "log.h:44:10: fatal error: securec.h: No such file or directory",
            "(row recipe.derived.header.securec.h)",
        ),
        (
            "  Could NOT find metadef (missing: METADEF_INC_DIR)",
            "row recipe.derived.module.metadef",
        ),
        (
            "    error: downloading 'https://gitcode.com/cann-src-third-party/json/releases/download/"
            "v3.11.3/include.zip' failed",
            "downloaded https://gitcode.com/cann-src-third-party/json/releases/download/v3.11.3/include.zip"
            " itself",
        ),
        (
            "    error: downloading 'https://gitcode.com/a/b.tar.gz' failed",
            "cannbuild.mirrors: {'https://gitcode.com/': 'https://your-mirror/'}",
        ),
        (
            "  error: SHA256 hash of\n\n    /w/src/ops-transformer/third_party/pkg/m.tar.gz\n\n"
            "  does not match expected value",
            "/w/src/ops-transformer/third_party/pkg/m.tar.gz is not the file this ref's CMake pins",
        ),
    ],
)
def test_known_failure_messages_get_their_fix(line, expected):
    assert expected in match_hint(["noise", line, "more noise"])


def test_unknown_output_has_no_hint():
    assert match_hint(["all fine", "nothing to see"]) is None


def tree(root: Path) -> Path:
    (root / "x86_64-linux/lib64").mkdir(parents=True)
    (root / "x86_64-linux/lib64/libascendcl.so").write_text("acl")
    (root / "x86_64-linux/lib64/libnnopbase.so").write_text("old nnopbase")
    (root / "lib64").symlink_to("x86_64-linux/lib64")
    (root / "runtime").mkdir()
    (root / "runtime/version.info").write_text("Version=8.5.0\n")
    return root


def snapshot(root: Path) -> dict:
    return {
        str(p.relative_to(root)): (
            p.is_symlink(),
            p.read_bytes() if p.is_file() and not p.is_symlink() else None,
        )
        for p in sorted(root.rglob("*"))
    }


def test_overlay_puts_staged_files_on_top_and_never_writes_the_toolkit(tmp_path: Path):
    toolkit = tree(tmp_path / "cann-8.5.0")
    before = snapshot(toolkit)
    stage = tmp_path / "stage"
    (stage / "cann/x86_64-linux/lib64").mkdir(parents=True)
    (stage / "cann/x86_64-linux/lib64/libnnopbase.so").write_text("new nnopbase")
    (stage / "cann/x86_64-linux/lib64/libops_base.so").write_text("opbase")
    (stage / "cann/share/info/opbase").mkdir(parents=True)
    (stage / "cann/share/info/opbase/version.info").write_text("Version=8.5.0\n")
    overlay = tmp_path / "overlay"
    root = staged_root(stage)
    assert root == stage / "cann"
    build_overlay(toolkit, root, overlay)
    assert (overlay / "lib64/libnnopbase.so").read_text() == "new nnopbase"
    assert (overlay / "lib64/libascendcl.so").read_text() == "acl"
    assert (overlay / "x86_64-linux/lib64/libascendcl.so").is_symlink()
    assert (overlay / "runtime").is_symlink()
    assert (overlay / "share/info/opbase/version.info").is_file()
    assert snapshot(toolkit) == before


def test_overlay_env_points_every_toolkit_path_at_the_overlay(tmp_path: Path):
    toolkit = tree(tmp_path / "cann-8.5.0")
    (tmp_path / "cann").symlink_to("cann-8.5.0")
    env = {
        "ASCEND_HOME_PATH": str(tmp_path / "cann"),
        "LD_LIBRARY_PATH": f"{tmp_path / 'cann'}/lib64:/usr/lib:{toolkit}/runtime",
        "PATH": "/usr/bin",
    }
    out = overlay_env(env, [tmp_path / "cann", toolkit], tmp_path / "ov")
    assert out["ASCEND_HOME_PATH"] == str(tmp_path / "ov")
    assert out["LD_LIBRARY_PATH"] == f"{tmp_path / 'ov'}/lib64:/usr/lib:{tmp_path / 'ov'}/runtime"
    assert out["PATH"] == "/usr/bin"


def test_second_holder_of_the_workspace_is_refused_with_who_holds_it(tmp_path: Path):
    ws = Workspace(root=tmp_path)
    with WorkspaceLock(ws, "cannbuild build"):
        with pytest.raises(WorkspaceBusy) as err, WorkspaceLock(ws, "cannbuild setup"):
            pass
        assert f"pid {os.getpid()} (cannbuild build" in err.value.paragraph()
    with WorkspaceLock(ws, "cannbuild setup"):
        pass  # released: free again


def test_atomic_write_leaves_no_partial_file(tmp_path: Path):
    target = tmp_path / "stamp.json"
    write_atomic(target, b"{}")
    assert target.read_bytes() == b"{}"
    assert [p.name for p in tmp_path.iterdir()] == ["stamp.json"]
    with open(target, "rb") as reader:  # opened before: it reads the old file whole
        write_atomic(target, b'{"step": "new"}')
        assert reader.read() == b"{}"
    assert target.read_bytes() == b'{"step": "new"}'


# A write cut short as a full disk or a quota cuts it: the file-size limit makes write(2)
# fail with EFBIG (SIGXFSZ ignored), in a child so the limit stays there.
_CUT_SHORT = """
import resource, signal, sys
from pathlib import Path
from cannbuild.workspace import write_atomic
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (64, 64))
try:
    write_atomic(Path(sys.argv[1]), b"new" * 1000)
except OSError as exc:
    print(exc.errno)
"""


def test_an_atomic_write_cut_short_leaves_the_old_file_and_no_temp(tmp_path: Path):
    import errno

    from warmcli import python_c

    target = tmp_path / "stamp.json"
    write_atomic(target, b"old")
    proc = python_c(_CUT_SHORT, str(target), timeout=60)
    assert proc.stdout.strip() == str(errno.EFBIG), proc.stderr
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["stamp.json"]


def test_atomic_write_gives_the_mode_the_umask_allows(tmp_path: Path):
    old = os.umask(0o027)
    try:
        write_atomic(tmp_path / "report.json", b"{}")
    finally:
        os.umask(old)
    assert (tmp_path / "report.json").stat().st_mode & 0o777 == 0o640


@pytest.mark.parametrize(
    "old,new,expected",
    [
        ({"soc": "ascend910b"}, {"soc": "ascend910_93"}, "soc changed: ascend910b -> ascend910_93"),
        (
            {"source": {"commit": "a" * 40}},
            {"source": {"commit": "b" * 40}},
            "source commit changed",
        ),
        ({"toolkit": {"version": "8.5.0"}}, {"toolkit": {"version": "9.0.0"}}, "toolkit changed"),
        ({"hashed_env": {}}, {"hashed_env": {"CXX": "clang++"}}, "environment changed: CXX"),
        ({"upstream": {"a": 1}}, {"upstream": {"a": 2}}, "output of a changed"),
    ],
)
def test_a_rerun_says_which_input_changed(old, new, expected):
    assert expected in explain_change(old, new)


def test_the_first_errors_anywhere_in_the_log_are_found_with_their_line_numbers():
    from cannbuild.build.runner import first_errors

    # v9.0.0: stderr (the CMake error) first, then the block-buffered, stamped stdout
    log = [
        "CMake Error at cmake/dependencies.cmake:56 (find_package):",
        "  Could NOT find dlog (missing: dlog_TRANSFORMER_INCLUDE_DIR)",
        "-- Configuring incomplete, errors occurred!",
    ] + [f"[2026-03-21 12:00:00] -- line {i} of configure output" for i in range(40)]
    assert first_errors(log, first_line=7) == (
        (7, "CMake Error at cmake/dependencies.cmake:56 (find_package):"),
        (8, "Could NOT find dlog (missing: dlog_TRANSFORMER_INCLUDE_DIR)"),
    )
    assert first_errors(["all", "fine"]) == ()
    many = [f"x.cpp:{i}: error: nope" for i in range(20)]
    assert len(first_errors(many)) == 3
    # a CMake error keeps the indented lines that say what it is
    cmake = [
        "-- verifying file...",
        "CMake Error at verify-makeself-populate.cmake:29 (message):",
        "  error: SHA256 hash of",
        "",
        "    /w/third_party/pkg/makeself-release-2.5.0-patch1.tar.gz",
        "",
        "  does not match expected value",
        "gmake[2]: *** [makeself-populate-download] Error 1",
    ]
    assert [n for n, _ in first_errors(cmake)] == [2, 3, 5, 7]
    assert first_errors(cmake)[-1][1] == "does not match expected value"


def test_a_long_log_line_keeps_its_error_in_the_digest():
    """Block-buffered stdout can put a long line of paths in front of the compiler's
    error on the same log line: the digest shortens the front, never the error."""
    from cannbuild.build.runner import first_errors

    stdout = "[2026-12-01 15:59:12]      dst='" + "/tmp/pytest-of-root/pytest-44/x" * 12 + "'"
    error = "/w/src/aclnn_flash_attention_score.cpp:31:15: error: static assertion failed"
    ((number, text),) = first_errors([stdout + error])
    assert number == 1 and len(text) <= 300
    assert text.startswith("...") and "error: static assertion failed" in text
    assert text[3:] in stdout + error
    assert first_errors(["x" * 400 + " error: at the end"])[0][1].endswith("error: at the end")
