import ipaddress
import os
import signal
import socket
import sys
import tempfile
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

import warmcli

from hosttree import HostTree

TESTS = Path(__file__).parent


def pytest_ignore_collect(collection_path: Path, config):
    """The quick loop (`-m "not integration"`) would deselect every test under
    integration/ after importing its modules, which import torch: it skips the folder."""
    if collection_path == TESTS / "integration":
        markexpr = " ".join(str(config.getoption("markexpr") or "").split())
        if markexpr == "not integration":
            return True
    return None


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_auto_num_workers(config) -> int:
    """`-n auto` (addopts): two xdist workers per core.  Much of the suite waits instead of
    computing (on the processes it starts, on the bounds it proves: a hung npu-smi, a
    silent remote), and a second worker per core fills those waits."""
    return 2 * len(os.sched_getaffinity(0))


@pytest.hookimpl(hookwrapper=True)
def pytest_collection(session):
    """Keep the test modules' rewritten bytecode (pytest's own cache in __pycache__) even
    where the environment says PYTHONDONTWRITEBYTECODE: without it every xdist worker
    rewrites the asserts of every test module again at each run, 2.3 s of CPU a worker,
    more than the quick loop's tests take on some workers."""
    saved = sys.dont_write_bytecode
    sys.dont_write_bytecode = False
    try:
        yield
    finally:
        sys.dont_write_bytecode = saved


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items) -> None:
    """Keep `xdist_group` grouping on pytest >= 9.2.  `--dist loadgroup` (addopts) reads
    the group from an `@group` suffix that xdist's worker writes into `item._nodeid`;
    pytest 9.2 keeps the node id in a structured `item._id`, so that write is lost and
    every group is spread over the workers silently (pytest-xdist#1386): torch imported in
    each, the shared builds made once per worker.  Where xdist's suffix did not take, it
    is written here into the structured id, as the proposed fix (pytest-xdist#1388) does."""
    if not getattr(config.option, "loadgroup", False):  # not under xdist (-n0, -p no:xdist)
        return
    for item in items:
        names = {
            str(mark.args[0] if mark.args else mark.kwargs.get("name", "default"))
            for mark in item.iter_markers("xdist_group")
        }
        structured = getattr(item, "_id", None)
        if not names or structured is None or "@" in item.nodeid.rpartition("]")[2]:
            continue
        item._id = type(structured).parse(f"{item.nodeid}@{'_'.join(sorted(names))}")


def pytest_configure(config):
    """A suite started in the background of a script (`.ci/run &`) inherits SIGINT
    ignored, and so would every cannbuild it starts; the Ctrl-C tests play a user at a
    terminal, whose foreground job has SIGINT.  Handled here, the children start with it."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    # `nohup .ci/run` ignores SIGHUP for every child too; the hang-up tests play a closed
    # terminal, which a cannbuild started under nohup would never see
    if signal.getsignal(signal.SIGHUP) is signal.SIG_IGN:
        signal.signal(signal.SIGHUP, signal.SIG_DFL)
    clean_git_settings()
    if not hasattr(config, "workerinput"):  # once per run: xdist's controller, or the run
        compile_the_checkout()
        quick_loop_temp_in_memory(config)
    else:
        warmcli.SHARED = config.workerinput.get("warmcli")


_SHARED_WARMCLI: list = []  # the controller's: [] until the first worker is set up


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node) -> None:
    """xdist's controller, for each worker it starts: the address of the one fork server
    the workers share (tests/warmcli.py start_shared), started for the first."""
    if not _SHARED_WARMCLI:
        _SHARED_WARMCLI.append(warmcli.start_shared())
    if _SHARED_WARMCLI[0] is not None:
        node.workerinput["warmcli"] = _SHARED_WARMCLI[0]


def clean_git_settings() -> None:
    """Every git the suite runs (its own and cannbuild's) reads no user or system settings,
    as on a clean CI machine: a developer's user.email, url.insteadOf or init.defaultBranch
    would otherwise make a test pass here that fails there (a `git tag -a` with no identity did).
    Set before xdist starts its workers, which inherit it."""
    os.environ["GIT_CONFIG_GLOBAL"] = os.devnull
    os.environ["GIT_CONFIG_NOSYSTEM"] = "1"


def compile_the_checkout() -> None:
    """Byte-compile the cannbuild the tests' processes import (and tasks.py, which the
    invoke route imports), as Python itself would on first import: where the environment
    says PYTHONDONTWRITEBYTECODE, each of the suite's hundreds of `python -m cannbuild`
    would otherwise compile every module it imports again (a third of its start-up)."""
    import compileall

    import cannbuild

    compileall.compile_dir(Path(cannbuild.__file__).parent, quiet=1)
    compileall.compile_file(TESTS.parent / "tasks.py", quiet=1)


# what /dev/shm must have free before the quick loop puts its tmp_path folders there: pytest
# keeps the last three runs' (about 0.5 GB each)
MEMORY_TEMP_FREE = 4 << 30


def quick_loop_temp_in_memory(config) -> None:
    """The quick loop writes some 40,000 small files a run and pytest deletes the run three
    before; on ext4 each new inode is then sought past the recently deleted ones (the
    kernel's find_inode_bit), a seventh of the loop's CPU samples here (perf).  On a tmpfs
    that cost is gone (the loop 6-8 s faster on 2 cores, 38-41 s against 45-47 s).  Only
    where nobody chose a temp folder (--basetemp, TMPDIR, PYTEST_DEBUG_TEMPROOT) and
    /dev/shm is a tmpfs with room where programs may run: a container's default /dev/shm
    (64 MB, noexec) keeps /tmp.  The full suite's builds stay on disk."""
    markexpr = " ".join(str(config.getoption("markexpr") or "").split())
    if markexpr != "not integration" or config.option.basetemp:
        return
    if os.environ.get("TMPDIR") or os.environ.get("PYTEST_DEBUG_TEMPROOT"):
        return
    shm = Path("/dev/shm")
    try:
        with open("/proc/self/mounts", encoding="utf-8") as mounts:
            fields = [line.split() for line in mounts]
        # the tests run scripts they write (stand-in build.sh, fake tools): not where noexec
        tmpfs = any(
            f[1:3] == [str(shm), "tmpfs"] and "noexec" not in f[3].split(",")
            for f in fields
            if len(f) > 3
        )
        stat = os.statvfs(shm)
    except OSError:
        return
    if tmpfs and os.access(shm, os.W_OK) and stat.f_bavail * stat.f_frsize >= MEMORY_TEMP_FREE:
        tempfile.tempdir = str(shm)  # pytest's basetemp root (tempfile.gettempdir())


@pytest.fixture
def tree(tmp_path: Path) -> HostTree:
    root = tmp_path / "host"
    root.mkdir()
    return HostTree(root)


def _local(address) -> bool:
    if not isinstance(address, tuple):  # AF_UNIX: a path
        return True
    host = address[0]
    if host in ("localhost", ""):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:  # a host name: name resolution itself is the network
        return False


@pytest.fixture(autouse=True)
def no_network(request, monkeypatch):
    """Unit tests never reach the network: a connection to anything but this machine
    (loopback or a unix socket) fails the test that tried it."""
    if request.node.get_closest_marker("integration"):
        return
    real_connect = socket.socket.connect
    real_connect_ex = socket.socket.connect_ex

    def connect(self, address):
        if not _local(address):
            raise AssertionError(f"a unit test tried to reach {address!r} over the network")
        return real_connect(self, address)

    def connect_ex(self, address):
        if not _local(address):
            raise AssertionError(f"a unit test tried to reach {address!r} over the network")
        return real_connect_ex(self, address)

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket.socket, "connect_ex", connect_ex)


# the tests that run the real repositories' code where CANNBUILD_UPSTREAM_REPOS is set
REAL_TIER = ("test_real_repos.py", "test_opbuild_emulation.py")


def pytest_terminal_summary(terminalreporter) -> None:
    """Say whether the real-repository tier (tests/integration/test_real_repos.py) ran: it
    needs CANNBUILD_UPSTREAM_REPOS, which CI does not have, and is skipped without it."""
    folder = os.environ.get("CANNBUILD_UPSTREAM_REPOS")
    stats = terminalreporter.stats
    ran = [
        r
        for key in ("passed", "failed")
        for r in stats.get(key, [])
        if any(t in getattr(r, "nodeid", "") for t in REAL_TIER) and r.when == "call"
    ]
    if folder and ran:
        said = f"ran {len(ran)} tests against {folder}"
    elif folder:
        said = f"{folder} is set, but no real-repository test ran (deselected?)"
    else:
        said = "not run: CANNBUILD_UPSTREAM_REPOS names no folder of the real repositories"
    terminalreporter.write_line(f"real upstream repositories: {said}")
