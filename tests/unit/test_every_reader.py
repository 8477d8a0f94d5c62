"""Every file cannbuild reads goes through one door (cannbuild/bounded.py, issue 41), and
every kind of file it reads is fed what breaks a reader: a FIFO, a link to /dev/zero, a
300 MB file, 200,000-deep JSON and invalid UTF-8.  Each is refused (exit 2 naming the
file) or, for cannbuild's own state, ignored with a warning naming it (the run ends as it
would without the file), within seconds, under a memory cap, and never with a traceback.

The table is made from the code: tests/readscan.py finds any read outside the door (so a
new reader must use it), and every `Kind` bounded.py declares must have a case below, run
through the CLI where a user can put the file there, or by calling its
reader where only a run puts it there; a new kind of file without a case fails
`test_every_kind_of_file_cannbuild_reads_has_a_hostile_case`."""

from __future__ import annotations

import fcntl
import os
import subprocess
import tarfile
from pathlib import Path
from typing import Callable, Dict, List, Optional, Tuple

import pytest
from cachedmemo import cached_memo
from msgspec import Struct
from readscan import PACKAGE, unexplained
from warmcli import python_c

from cannbuild import bounded
from cannbuild.errors import UsageError
from cannbuild.sources.bundle import seed_from_bundle
from cannbuild.workspace import Workspace

from clirun import cannbuild, clean_env
from hosttree import HostTree
from tinyrecipe import tiny_recipe

MEMORY_CAP = 1 << 30  # address space of each run: the hostile files are far bigger read whole
WITHIN = 30  # seconds: every case ends in about one; a reader that blocks, never
BIG = 300 << 20  # sparse: no disk used
DEEP = 200_000


def _plant(path: Path, hostile: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if hostile == "fifo":
        os.mkfifo(path)
    elif hostile == "dev-zero":
        path.symlink_to("/dev/zero")
    elif hostile == "300-mb":
        with open(path, "wb") as fh:
            fh.truncate(BIG)
    elif hostile == "deep-json":
        path.write_text("[" * DEEP + "]" * DEEP)
    else:  # invalid UTF-8 inside what is otherwise JSON
        path.write_bytes(b'{"name": "\xff\xfe\xc3("}\n')


HOSTILE = ("fifo", "dev-zero", "300-mb", "deep-json", "invalid-utf-8")
# what a reader must not even open; the others it opens and must not be hurt by
UNOPENABLE = ("fifo", "dev-zero")


class Case(Struct, frozen=True, kw_only=True):
    """A command reaching one reader: its arguments, folder and the file it reads.  `ignored`:
    the file is cannbuild's own state, read as absent with a warning; `content`: for the
    variants that are regular files, what the reader does with them when any bytes are
    valid input ("read": it goes on; None: as for the others)."""

    args: List[str]
    cwd: Path
    path: Path
    ignored: bool = False
    content: Optional[str] = None
    hold_lock: Optional[Path] = None


def _owned(ws: Path) -> Path:
    from cannbuild.ownership import claim

    claim(ws, "workspace", "--workspace")
    return ws


def _host(tmp: Path) -> Path:
    tree = HostTree(tmp / "host")
    tree.root.mkdir(parents=True, exist_ok=True)
    tree.toolkit_cann("8.5.0")
    return tree.root


def _profile(name: str) -> Callable[[Path], Case]:
    def case(tmp: Path) -> Case:
        out = tmp / "user" / "job_ascend_pt" / "ASCEND_PROFILER_OUTPUT" / name
        return Case(args=["profile", "user", "--out", "out"], cwd=tmp, path=out)

    return case


def _recipe_template(tmp: Path) -> Case:
    recipe = tmp / "user" / "tiny.toml"
    recipe.parent.mkdir()
    recipe.write_text(tiny_recipe('CC = "gcc"'))
    args = ["plan", "--sysroot", str(_host(tmp)), "--soc", "ascend910b", "--recipe", str(recipe)]
    return Case(args=[*args, "-w", "ws"], cwd=tmp, path=tmp / "user" / "steps" / "build.j2")


def _rendered_file(tmp: Path) -> Case:
    subprocess.run(["git", "init", "-q", str(tmp / "user")], check=True)
    args = ["ci", "--provider", "github", "--out", "ci.yml"]
    return Case(args=args, cwd=tmp / "user", path=tmp / "user" / "ci.yml")


def _status(
    *where: str, ignored: bool = True, content: Optional[str] = None
) -> Callable[[Path], Case]:
    def case(tmp: Path) -> Case:
        ws = _owned(tmp / "ws")
        return Case(
            args=["status", "-w", "ws"],
            cwd=tmp,
            path=ws.joinpath(*where),
            ignored=ignored,
            content=content,
        )

    return case


def _tool_memo(tmp: Path) -> Case:
    """The build tools' versions, in the user's cache (HOME is tmp/home: see _run)."""
    args = ["doctor", "--sysroot", str(_host(tmp))]
    memo = tmp / "home" / ".cache" / "cannbuild" / "tools.json"
    return Case(args=args, cwd=tmp, path=memo, ignored=True)


def _lock_holder(tmp: Path) -> Case:
    ws = _owned(tmp / "ws")
    (ws / ".lock").touch()
    return Case(
        args=["clean", "-w", "ws"],
        cwd=tmp,
        path=ws / ".lock.info",
        ignored=True,
        hold_lock=ws / ".lock",
    )


def _sandbox_record(tmp: Path) -> Case:
    toolkit = tmp / "user" / "sb" / "sysroot" / "usr" / "local" / "Ascend" / "cann"
    toolkit.mkdir(parents=True)
    return Case(
        args=["doctor", "--cann-path", str(toolkit), "-w", "ws"],
        cwd=tmp,
        path=tmp / "user" / "sb" / "sandbox.json",
        ignored=True,
    )


def _user(args: List[str], name: str, content: Optional[str] = None) -> Callable[[Path], Case]:
    def case(tmp: Path) -> Case:
        return Case(args=args, cwd=tmp, path=tmp / "user" / name, content=content)

    return case


# The kinds a user (or a script) can put where cannbuild reads them, by the command that reads
# each.  Keys are bounded.py's names.
CLI_CASES: Dict[str, Callable[[Path], Case]] = {
    "CONFIG": _user(["--config", "user/ci.yaml", "status", "-w", "ws"], "ci.yaml"),
    "RECIPE": _user(
        ["lock", "--cann", "9.0.0", "--soc", "A2", "--recipe", "user/r.toml", "-w", "ws"], "r.toml"
    ),
    "STEP_TEMPLATE": _recipe_template,
    "VARIANTS": _user(["bench", "--variants", "user/tiles.toml", "-w", "ws"], "tiles.toml"),
    "MANIFEST": _user(
        ["recipe", "draft", "--ref", "v9.9.9", "--manifest", "user/cann.xml", "-w", "ws"],
        "cann.xml",
    ),
    "BUILD_SH": _user(
        [
            "recipe",
            "check",
            "9.0",
            "--src",
            "opbase=user",
            "--src",
            "ops-transformer=user",
            "-w",
            "ws",
        ],
        "build.sh",
    ),
    "LOCK": _user(["status", "--lock-file", "user/cannbuild.lock", "-w", "ws"], "cannbuild.lock"),
    "BENCH_RESULTS": _user(["bench", "--compare", "user/old.json", "user/new.json"], "old.json"),
    # a patch is any bytes (git apply judges them): bench goes on to look for a toolkit
    "PATCH": _user(
        ["bench", "--build-variant", "q=user/tile.diff", "-w", "ws"], "tile.diff", "read"
    ),
    "RENDERED_FILE": _rendered_file,
    "TARGET": _status("target.json", ignored=False),
    "PROFILE_CSV": _profile("kernel_details.csv"),
    "PROFILE_TRACE": _profile("trace_view.json"),
    "PROFILE_DB": _profile("ascend_pytorch_profiler_0.db"),
    "STAMP": _status("stamps", "opbase-build.json"),
    "ATTEMPT": _status("reports", "last-build.json"),
    # opp/set_env.bash: any text that is not cannbuild's header is no source order
    "INSTALLED_FILE": _status("opp", "set_env.bash", content="read"),
    "MEMO": _tool_memo,
    "LOCK_HOLDER": _lock_holder,
    "SANDBOX_RECORD": _sandbox_record,
}
CLI_CASES["OWNER_MARK"] = lambda tmp: Case(  # not ours then: clean refuses, as without it
    args=["clean", "-w", "ws"], cwd=tmp, path=_owned(tmp / "ws") / ".cannbuild-owned", ignored=True
)

# The kinds only a run puts where they are read (a download, a run's own files, the host's
# version files): their reader is called with the hostile file, in a process of its own.
# (code, how it ends: "refused" exit 2 naming the file, "ignored" a warning naming it,
# "read" it goes on)
DIRECT: Dict[str, Tuple[str, str]] = {
    "OPERATOR_FILE": (  # markdown, read for its constraints: any text is some
        "from cannbuild.diagnose.facts import operator_facts\n"
        "operator_facts(None, 'ascend910b', path.parents[3])",
        "refused-or-read",
    ),
    "HOST_FILE": (  # key=value lines: any text is one, with or without keys
        "from cannbuild.host.infofiles import InfoFileError, read_kv\n"
        "try:\n    read_kv(path)\nexcept InfoFileError as exc:\n    print(exc); sys.exit(2)",
        "refused-or-read",
    ),
    "BINARY": (
        "from cannbuild.validate.elfcheck import check_library\n"
        "found = check_library(path, [], {}, 'x86_64')\nprint(found.problems)\n"
        "sys.exit(0 if found.ok else 2)",
        "refused",
    ),
    "SOURCE_FILE": (
        "from cannbuild.build.derived import cmake_files\ncmake_files(path.parent)",
        "read",
    ),
    "ARCHIVE": (  # 300 MB of zeros is an empty tar: nothing to unpack
        "from cannbuild.sources.checkout import unpack_archive\n"
        "unpack_archive(path, path.parent / 'out')",
        "refused-or-read",
    ),
    "BUNDLE": (
        "from cannbuild.sources.bundle import seed_from_bundle\n"
        "from cannbuild.workspace import Workspace\n"
        "seed_from_bundle(Workspace(root=path.parent / 'ws'), path)",
        "refused",
    ),
    "CHECKOUT_RECORD": (
        "from cannbuild.sources.checkout import placed_copies\n"
        "from cannbuild.workspace import Workspace\n"
        "placed_copies(Workspace(root=path.parents[1]))",
        "ignored",
    ),
    "RUN_FILE": (
        "from cannbuild.validate.torchnpu import read_result\nread_result(path)",
        "ignored",
    ),
    "LOG": ("from cannbuild.childlog import read_log\nread_log(path)", "read"),
}
# where each direct case's file is, below the test's folder
DIRECT_PATHS = {
    "OPERATOR_FILE": "src/attention/flash_attention_score/docs/aclnnFlashAttentionScoreV2.md",
    "SOURCE_FILE": "checkout/CMakeLists.txt",
    "CHECKOUT_RECORD": "ws/src/.opbase.checkout.json",
}
# A bundle's manifest is a member of the tar, never a FIFO or a device; what it holds is
# fed through the bundle (test_a_bundles_manifest_that_is_not_json_is_refused).  The rest
# are cannbuild's own files that no user can replace: its shipped data, the kernel's
# /proc, tensors a check program wrote into the run's fresh folder a moment before.
ELSEWHERE = {
    "BUNDLE_MANIFEST": "test_a_bundles_manifest_that_is_not_json_is_refused",
    "DATA_FILE": "cannbuild's own templates and sources, inside its installed package",
    "PROC_FILE": "/proc/self/status, /proc/meminfo, /proc/self/maps: the kernel's",
    "CASE_DATA": "tensors a check program wrote into the run's fresh validate/ folder",
}


def _kinds() -> Dict[str, bounded.Kind]:
    return {name: v for name, v in vars(bounded).items() if isinstance(v, bounded.Kind)}


# each module's reads, kept in pytest's cache by the module's text (tests/readscan.py): a
# run parses only the modules that changed, not all of them (0.9 s of CPU)
READS_MEMO = "cannbuild/readscan-reads"


def test_no_file_is_read_outside_the_door(request) -> None:
    with cached_memo(request.config, READS_MEMO) as memo:
        found = unexplained(memo=memo)
    assert found == []


def test_the_scan_finds_a_new_reader(tmp_path: Path) -> None:
    """The scan can say FAIL: a module reading a file itself is named."""
    package = tmp_path / "cannbuild"
    package.mkdir()
    (package / "bounded.py").write_text("")
    (package / "new.py").write_text(
        "import json\nfrom pathlib import Path\n"
        "a = Path('x').read_text()\nb = json.loads('1')\nc = open('y')\nd = open('z', 'w')\n"
        "# bounded: a reason\ne = open('z')\n"
    )
    memo: dict = {}
    assert (
        unexplained(package)
        == unexplained(package, memo)
        == [
            "cannbuild/new.py:3: Path('x').read_text",
            "cannbuild/new.py:4: json.loads",
            "cannbuild/new.py:5: open",
        ]
    )
    # the memo of the run before holds new.py's old reads: its new text is read again
    (package / "new.py").write_text("from pathlib import Path\n\nx = Path('y').read_bytes()\n")
    assert unexplained(package, memo) == ["cannbuild/new.py:3: Path('y').read_bytes"]
    assert len(memo) == 2  # bounded.py here is not the door: one entry a module


def test_every_kind_of_file_cannbuild_reads_has_a_hostile_case() -> None:
    kinds = set(_kinds())
    covered = set(CLI_CASES) | set(DIRECT) | set(ELSEWHERE)
    assert kinds - covered == set(), "a kind of file with no hostile case below"
    assert covered - kinds == set(), "a case for a kind bounded.py no longer has"
    source = "\n".join(p.read_text() for p in PACKAGE.rglob("*.py") if p.name != "bounded.py")
    assert [k for k in kinds if k not in source] == [], "a kind no reader uses"


def _run(case: Case) -> subprocess.CompletedProcess:
    # the user's cache below that HOME whatever the session set (the integration tests' own)
    env = clean_env(HOME=str(case.cwd / "home"), XDG_CACHE_HOME=str(case.cwd / "home" / ".cache"))
    if case.hold_lock is None:
        return cannbuild(*case.args, cwd=case.cwd, timeout=WITHIN, env=env, memory_cap=MEMORY_CAP)
    with open(case.hold_lock) as held:  # another run holds the workspace
        fcntl.flock(held, fcntl.LOCK_EX)
        return cannbuild(*case.args, cwd=case.cwd, timeout=WITHIN, env=env, memory_cap=MEMORY_CAP)


def _params() -> List[object]:
    """Each kind with each hostile file; the FIFO and the link to /dev/zero (what hangs or
    never ends) in the quick loop, the rest with the integration tests (each run costs a
    process)."""
    out = []
    for kind in sorted(CLI_CASES):
        for hostile in HOSTILE:
            marks = [] if hostile in UNOPENABLE else [pytest.mark.integration]
            out.append(pytest.param(kind, hostile, marks=marks, id=f"{kind}-{hostile}"))
    return out


@pytest.mark.parametrize("kind, hostile", _params())
def test_each_reader_refuses_or_ignores_a_hostile_file_naming_it(
    tmp_path: Path, kind: str, hostile: str
) -> None:
    case = CLI_CASES[kind](tmp_path)
    if case.ignored:  # the run without the file at all
        case.path.unlink(missing_ok=True)
        plain = _run(case)
    _plant(case.path, hostile)
    proc = _run(case)
    said = " ".join((proc.stdout + proc.stderr).split())
    assert "Traceback" not in said, said
    if hostile not in UNOPENABLE and case.content == "read":
        return  # any bytes are input here: the reader went on, unhurt
    assert case.path.name in said, said
    if case.ignored:
        assert proc.returncode == plain.returncode, said
        warned = [line for line in proc.stderr.splitlines() if "cannbuild: warning:" in line]
        assert any(str(case.path) in line for line in warned), said
    else:
        assert proc.returncode == 2, said
    if hostile in UNOPENABLE:
        assert "not a regular file" in said, said


@pytest.mark.parametrize("hostile", HOSTILE)
@pytest.mark.parametrize("kind", sorted(DIRECT))
def test_each_reader_only_a_run_feeds_is_not_hurt_by_a_hostile_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str, hostile: str
) -> None:
    code, ends = DIRECT[kind]
    path = tmp_path / DIRECT_PATHS.get(kind, "file")
    _plant(path, hostile)
    monkeypatch.chdir(tmp_path)
    program = (
        "import sys, warnings\nfrom pathlib import Path\nfrom cannbuild.errors import CannbuildError\n"
        "warnings.simplefilter('always')\npath = Path(sys.argv[1])\n"
        "try:\n"
        + "".join(f"    {line}\n" for line in code.splitlines())
        + "except CannbuildError as exc:\n    print(exc.paragraph()); sys.exit(exc.exit_code)\n"
    )
    proc = python_c(program, str(path), timeout=WITHIN, memory_cap=MEMORY_CAP)
    said = " ".join((proc.stdout + proc.stderr).split())
    assert "Traceback" not in said, said
    if ends in ("read", "refused-or-read") and hostile not in UNOPENABLE:
        read = proc.returncode == 0
        refused = proc.returncode in (2, 4) and path.name in said  # 4: a damaged download
        assert read or (ends == "refused-or-read" and refused), said
        return
    if ends == "ignored":
        assert proc.returncode == 0 and "StateIgnored" in said and path.name in said, said
    elif ends == "read":  # a FIFO or a device where any bytes would do: not opened, no error
        assert proc.returncode == 0, said
    else:
        assert proc.returncode in (2, 4) and path.name in said, said  # 4: a damaged download


@pytest.mark.parametrize("content", [b"[" * DEEP + b"]" * DEEP, b'{"lock": "\xff\xfe"}'])
def test_a_bundles_manifest_that_is_not_json_is_refused(tmp_path: Path, content: bytes) -> None:
    (tmp_path / "cannbuild.lock").write_bytes(b"")
    (tmp_path / "manifest.json").write_bytes(content)
    bundle = tmp_path / "b.tar"
    with tarfile.open(bundle, "w") as tar:  # a member is never a FIFO: read in this process
        for name in ("cannbuild.lock", "manifest.json"):
            tar.add(tmp_path / name, arcname=name)
    with pytest.raises(UsageError) as refused:
        seed_from_bundle(Workspace(root=tmp_path / "ws"), bundle)
    said = refused.value.paragraph()
    assert f"bundle manifest {bundle}:manifest.json" in said
    assert "does not hold what cannbuild expects" in said or "not valid JSON" in said
