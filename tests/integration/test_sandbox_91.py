"""The sandbox's CANN 9.1 stand-ins have the 9.1 layout (docs/upstream-9.1.md §3, §4).

The stand-in repositories are rendered (or built, with git, once per module) as the
sandbox makes them; their build.sh scripts and the sandbox network helpers run for
real (bash, cmake -P), without a toolkit or a build.
"""

from __future__ import annotations

import hashlib
import io
import os
import re
import subprocess
import tarfile
from pathlib import Path
from typing import Dict, List

import pytest

from cannbuild.resources import data_dir
from cannbuild.sandbox.files import CommandLog
from cannbuild.sandbox.releases import release, standins
from cannbuild.sandbox.repos import (
    _render_commit,
    build_repos,
    build_third_party,
    pinned_cmake_tarball,
)
from cannbuild.sandbox.sharedrepos import cann_cmake_files, cmake_tarball_url
from cannbuild.sandbox.spec import OBS_UPSTREAM, SandboxInfo
from cannbuild.sandbox.third_party import mirror_path, standin_archives
from cannbuild.sources.archives import discover

pytestmark = pytest.mark.xdist_group("sandbox-91")  # one xdist worker makes the module's fixture

EXTRA = {
    "opbase_tag_id": "0" * 40,
    "optensor_tag_id": "1" * 40,
    "optensor_api": "2",
    "cann_cmake_tag": "master-026",
    "cann_cmake_sha256": "2" * 64,
}
HELP = "build script for ops-transformer repository"
NO_CANN = "Please set the toolkit package installation directory"


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True, check=True
    ).stdout.strip()


def last(repo: str, ref: str) -> object:
    """The newest stand-in commit of `repo` laid out by its flavor at `ref`."""
    return [c for c in standins().history(repo) if c.flavor.ref == ref][-1]


@pytest.fixture(scope="module")
def rendered(tmp_path_factory) -> Dict[str, Path]:
    """opbase and ops-transformer at v9.0.0 and at branch 9.1.0, as the sandbox writes them."""
    root = tmp_path_factory.mktemp("rendered")
    out = {}
    for name, commit in (
        ("ot90", last("ops-transformer", "v9.0.0")),
        ("ob90", last("opbase", "v9.0.0")),
        ("ot91", last("ops-transformer", "v9.1.0")),
        ("ob91", last("opbase", "v9.1.0")),
    ):
        (root / name).mkdir()
        _render_commit(root / name, commit, EXTRA)
        out[name] = root / name
    return out


@pytest.fixture(scope="module")
def upstream(tmp_path_factory) -> Dict[str, object]:
    """The sandbox's stand-in repositories, built with git as `sandbox create` builds them."""
    root = tmp_path_factory.mktemp("upstream")
    ids = build_repos(root / "mirror", root / "build", CommandLog(path=root / "create.log"))
    build_third_party(root / "mirror")
    return {"mirror": root / "mirror", "build": root / "build", "ids": ids}


def test_9_1_is_a_release_the_sandbox_lays_out_with_the_driver_its_notes_pair():
    rel = release("9.1.0")
    assert (rel.version, rel.layout, rel.driver) == ("9.1.0", "cann", "26.1.0")
    assert rel.opbase_in_toolkit


def test_the_9_1_repos_keep_only_the_pins_in_cmake_third_party(rendered):
    ot, ob = rendered["ot91"], rendered["ob91"]
    names = sorted(p.name for p in (ot / "cmake/third_party").iterdir())
    assert names == [".gitkeep", "opbase.cmake", "ops-tensor.cmake"]
    assert not (ob / "cmake/third_party").exists()
    # and 9.0 still has its archive modules
    assert (rendered["ot90"] / "cmake/third_party/makeself-fetch.cmake").is_file()
    # one fetch_cann_cmake.cmake, byte for byte, in both repos
    fetch = (ot / "cmake/fetch_cann_cmake.cmake").read_text()
    assert fetch == (ob / "cmake/fetch_cann_cmake.cmake").read_text()
    assert 'set(CANN_CMAKE_TAG "master-026")' in fetch
    assert 'IS_DIRECTORY "${CANN_3RD_LIB_PATH}/cann-cmake"' in fetch
    assert '"${CANN_3RD_LIB_PATH}/cmake-${CANN_CMAKE_TAG}.tar.gz"' in fetch
    assert "GIT_REPOSITORY https://gitcode.com/cann/cmake.git" in fetch


def test_the_9_1_cmakelists_take_third_party_libraries_through_cann_cmake(rendered):
    ot = (rendered["ot91"] / "CMakeLists.txt").read_text()
    # fetch_cann_cmake before project(), as OT@9.1.0:CMakeLists.txt:12
    project = re.search(r"^project\(", ot, re.MULTILINE)
    assert project and ot.index("include(cmake/fetch_cann_cmake.cmake)") < project.start()
    calls = re.findall(r"^add_cann_third_party\((\S+)\)", ot, re.MULTILINE)
    assert calls == ["json", "eigen", "abseil-cpp", "protobuf"]
    assert "third_party.cmake" not in ot
    # OT@9.1.0:cmake/modules/Findruntime.cmake:18-19 looks for acl/acl_rt.h, 9.0's for acl/acl.h
    runtime = (rendered["ot91"] / "cmake/modules/Findruntime.cmake").read_text()
    assert "NAMES acl/acl_rt.h" in runtime and "acl/acl.h" not in runtime
    assert "NAMES acl/acl.h" in (rendered["ot90"] / "cmake/modules/Findruntime.cmake").read_text()
    assert "include(${PROJECT_SOURCE_DIR}/cmake/dependencies.cmake)" in ot
    ob = (rendered["ob91"] / "CMakeLists.txt").read_text()
    assert re.findall(r"^add_cann_third_party\((\S+)\)", ob, re.MULTILINE) == [
        "protobuf",
        "eigen",
        "json",
    ]
    assert "find_cann_package(acl_rt MODULE REQUIRED)" in ob


def test_the_9_1_build_dependencies_drop_asc_tools(rendered):
    ot = (rendered["ot91"] / "version.cmake").read_text()
    build = re.findall(r"set_cann_build_dependencies\((\S+) ", ot)
    assert build == [
        "runtime",
        "opbase",
        "hcomm",
        "ge-executor",
        "metadef",
        "ge-compiler",
        "asc-devkit",
        "bisheng-compiler",
    ]
    assert 'set_cann_package(ops-transformer VERSION "9.1.0")' in ot
    # 9.0 declared asc-tools
    assert "asc-tools" in (rendered["ot90"] / "CMakeLists.txt").read_text()


def test_the_9_1_ops_transformer_pins_opbase_and_ops_tensor(rendered):
    third = rendered["ot91"] / "cmake/third_party"
    assert f"set(OPBASE_TAG_ID {EXTRA['opbase_tag_id']})" in (third / "opbase.cmake").read_text()
    tensor = (third / "ops-tensor.cmake").read_text()
    assert f"set(OPTENSOR_TAG_ID {EXTRA['optensor_tag_id']})" in tensor
    # the lookup order of OT@9.1.0:cmake/third_party/ops-tensor.cmake (§3e)
    order = [
        '"${PROJECT_SOURCE_DIR}/../ops-tensor"',
        '"${CANN_3RD_LIB_PATH}/ops-tensor"',
        "git fetch origin ${OPTENSOR_TAG_ID} --depth=1",
        "TIMEOUT 20",
        "git checkout ${CHECKOUT_REF}",
        "https://gitcode.com/cann/ops-tensor.git",
    ]
    positions = [tensor.index(text) for text in order]
    assert positions == sorted(positions)


def run_build_sh(checkout: Path, *args: str, path: str = "/usr/bin:/bin"):
    env = {"PATH": path, "HOME": str(checkout)}
    return subprocess.run(
        ["bash", "build.sh", *args], cwd=checkout, env=env, capture_output=True, text=True
    )


@pytest.mark.parametrize(
    "ref, flag, accepted",
    [
        ("ot91", "--disable_asan", False),  # removed at 9.1 (v9.0.0:1131)
        ("ot90", "--disable_asan", True),
        ("ot91", "--asan", True),
        ("ot91", "--aicpu_kernel", True),
        ("ot91", "--aicpu=on", True),
        ("ot91", "--rule_launch=x", True),
        ("ot91", "--example_name=fa", True),
        ("ot91", "--genop_aicpu=x", True),
        ("ot91", "--tiling_key=1", True),
        ("ot90", "--tiling_key=1", False),
        ("ot91", "--bogus-flag", False),
    ],
)
def test_ops_transformer_9_1_build_sh_parses_the_9_1_options(rendered, ref, flag, accepted):
    proc = run_build_sh(rendered[ref], flag)
    assert proc.returncode == 1
    # an accepted flag gets as far as the CANN lookup; another prints the help
    assert (NO_CANN in proc.stdout) is accepted, proc.stdout + proc.stderr
    assert (HELP in proc.stdout) is not accepted


def test_ops_transformer_9_1_stamps_its_output_without_gawk(rendered, tmp_path):
    text = (rendered["ot91"] / "build.sh").read_text()
    assert "| gawk" not in text and "} | while IFS= read -r line" in text
    assert '"kirin9030" "mc62" )' in text and "mc62cm12a" not in text
    bin_dir = tmp_path / "bin"  # everything but gawk
    bin_dir.mkdir()
    for folder in ("/usr/bin", "/bin"):
        for tool in os.listdir(folder):
            if tool != "gawk" and not (bin_dir / tool).exists():
                (bin_dir / tool).symlink_to(os.path.join(folder, tool))
    proc = run_build_sh(rendered["ot91"], "--soc=ascend910b", path=str(bin_dir))
    assert proc.returncode == 1
    assert re.match(r"\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\] ", proc.stdout), proc.stdout
    # v9.0.0 cannot run without gawk
    assert run_build_sh(rendered["ot90"], "--bogus-flag", path=str(bin_dir)).returncode == 127


def test_opbase_9_1_refuses_s_and_takes_extra_cmake_args(rendered):
    proc = run_build_sh(rendered["ob91"], "-s")
    assert proc.returncode == 1 and "Undefined option: -s" in proc.stdout
    assert run_build_sh(rendered["ob90"], "-s", "-h").returncode == 0
    proc = run_build_sh(rendered["ob91"], "--extra-cmake-args=ENABLE_BUILD_DEVICE=OFF", "-h")
    assert proc.returncode == 0, proc.stdout
    assert run_build_sh(rendered["ob90"], "--extra-cmake-args=A=B").returncode == 1


def test_cann_cmake_declares_the_9_1_archives_with_the_places_upstream_takes():
    archives = standin_archives()
    contexts = {key: a.context() for key, a in archives.items()}
    files = cann_cmake_files("master-026", contexts)
    assert "macro(add_cann_third_party name)" in files["function/prepare.cmake"]
    assert "add_cann_third_party(makeself-fetch)" in files["function/prepare.cmake"]
    modules = {k: v for k, v in files.items() if k.startswith("third_party/")}
    declared = {d.url: d for d in discover(modules)}
    obs = OBS_UPSTREAM
    gitcode = "https://gitcode.com/cann-src-third-party/"
    assert set(declared) == {
        obs + "json/json-3.11.3.tar.gz",
        obs + "abseil-cpp/abseil-cpp-20230802.1.tar.gz",
        obs + "protobuf/protobuf-25.1.tar.gz",
        gitcode + "eigen/releases/download/5.0.0-h0.trunk/eigen-5.0.0.tar.gz",
        gitcode + "makeself/releases/download/release-2.5.0-patch1.0/"
        "makeself-release-2.5.0-patch1.tar.gz",
        obs + "googletest/googletest-1.14.0.tar.gz",
    }
    served = {a.url: a for a in archives.values()}
    for url, item in declared.items():
        if "googletest" in url:
            continue  # test builds only: the mirror does not serve it
        assert item.sha256 in (None, served[url].sha256), url
    assert declared[obs + "json/json-3.11.3.tar.gz"].sha256 == archives["json_obs"].sha256
    # the local copies each module takes (CC@master-026, docs/upstream-9.1.md §3d)
    places = {
        "json": ["/json-3.11.3.tar.gz", "/json/json-3.11.3.tar.gz", "${JSON_SOURCE_PATH}/include"],
        "eigen": ["eigen-5.0.0.tar.gz", "eigen-5.0.0", "/eigen"],
        "abseil-cpp": ["abseil-cpp/${ABSEIL_VERSION_PKG}", "/${ABSEIL_VERSION_PKG}"],
        "protobuf": ["protobuf-all-25.1.tar.gz", "protobuf-25.1.tar.gz"],
        "makeself-fetch": ["makeself-release-2.5.0-patch1.tar.gz", "makeself-header.sh"],
    }
    for name, texts in places.items():
        for text in texts:
            assert text in modules[f"third_party/{name}.cmake"], (name, text)


def test_the_mirror_serves_each_archive_where_a_mirror_rule_maps_its_url(tmp_path):
    info = SandboxInfo(
        dir=tmp_path,
        variant="A3",
        cann="9.1.0",
        key="k",
        sysroot=tmp_path / "sysroot",
        toolkit=tmp_path / "tk",
        set_env=tmp_path / "set_env.sh",
        mirror=tmp_path / "mirror",
        upstream="https://gitcode.com/",
        soc="ascend910_93",
        chip="Ascend910_9392",
    )
    urls = [a.url for a in standin_archives().values()] + [cmake_tarball_url("master-026")]
    for url in urls:
        prefix = next(p for p in info.mirrors if url.startswith(p))
        mapped = info.mirrors[prefix] + url[len(prefix) :]
        assert mapped == mirror_path(info.mirror, url).as_uri(), url


@pytest.mark.parametrize(
    "network, found",
    [("mirror", True), ("file:///nonexistent-network/", False), ("", False)],
)
def test_the_stand_ins_reach_only_the_sandbox_network(upstream, tmp_path, network, found):
    if network == "mirror":
        network = upstream["mirror"].as_uri() + "/"
    helper = data_dir("templates") / "sandbox/common/sandbox_network.cmake"
    script = tmp_path / "probe.cmake"
    script.write_text(
        f"include({helper})\n"
        f'set(U "{OBS_UPSTREAM}json/json-3.11.3.tar.gz")\n'
        "sandbox_download(U)\n"
        'message(STATUS "routed ${U}")\n'
        "sandbox_git_reachable(https://gitcode.com/cann/cmake.git)\n"
        'message(STATUS "cloned")\n'
    )
    env = {**os.environ, "CANNBUILD_SANDBOX_NETWORK": network}
    proc = subprocess.run(["cmake", "-P", str(script)], env=env, capture_output=True, text=True)
    assert (proc.returncode == 0) is found, proc.stderr
    if found:
        assert "routed file://" in proc.stdout and "cloned" in proc.stdout
    else:
        said = " ".join(proc.stderr.split())
        assert "Could not resolve host: cann-3rd.obs.cn-north-4.myhuaweicloud.com" in said


def test_without_network_the_cann_cmake_clone_fails_naming_the_url(upstream, tmp_path):
    helper = data_dir("templates") / "sandbox/common/sandbox_network.cmake"
    script = tmp_path / "probe.cmake"
    script.write_text(
        f"include({helper})\nsandbox_git_reachable(https://gitcode.com/cann/cmake.git)\n"
    )
    env = {**os.environ, "CANNBUILD_SANDBOX_NETWORK": "file:///nonexistent-network/"}
    proc = subprocess.run(["cmake", "-P", str(script)], env=env, capture_output=True, text=True)
    assert proc.returncode != 0
    said = " ".join(proc.stderr.split())  # CMake wraps its messages
    assert "Failed to clone repository: 'https://gitcode.com/cann/cmake.git'" in said
    assert "Could not resolve host: gitcode.com" in said


def pin(checkout: Path, path: str, name: str) -> str:
    text = git(checkout, "show", f"HEAD:{path}")
    match = re.search(rf"set\({name} ([0-9a-f]{{40}})\)", text)
    assert match, text
    return match.group(1)


def test_the_9_1_pins_are_commits_of_the_stand_in_repositories_but_not_their_tips(
    upstream, tmp_path
):
    mirror: Path = upstream["mirror"]  # type: ignore[assignment]
    cann = mirror / "cann"
    ot = tmp_path / "ot"
    subprocess.run(
        ["git", "clone", "-q", "-b", "9.1.0", str(cann / "ops-transformer.git"), str(ot)]
    )
    assert git(ot, "rev-parse", "v9.1.0.pre^{commit}") in upstream["ids"]["ops-transformer"]
    opbase = pin(ot, "cmake/third_party/opbase.cmake", "OPBASE_TAG_ID")
    optensor = pin(ot, "cmake/third_party/ops-tensor.cmake", "OPTENSOR_TAG_ID")
    ob_bare, ts_bare = cann / "opbase.git", cann / "ops-tensor.git"
    assert git(ob_bare, "log", "-1", "--format=%s", opbase) == "fix EZ0037"
    # behind both v9.1.0.pre and the 9.1.0 branch of opbase, as cd48c600 is upstream
    for ref in ("v9.1.0.pre", "9.1.0"):
        assert git(ob_bare, "merge-base", opbase, ref) == opbase != git(ob_bare, "rev-parse", ref)
    assert git(ts_bare, "cat-file", "-t", optensor) == "commit"
    assert optensor != git(ts_bare, "rev-parse", "master")
    assert "CANN_OPS_TENSOR_API 2" in git(ts_bare, "show", f"{optensor}:include/cann_ops_tensor.h")
    # ...and 9.0 still pins the untagged commit before v9.0.0
    subprocess.run(["git", "-C", str(ot), "checkout", "-q", "v9.0.0"], check=True)
    old = pin(ot, "cmake/third_party/opbase.cmake", "OPBASE_TAG_ID")
    assert git(ob_bare, "log", "-1", "--format=%s", old) == "log reporting changes"


def test_master_026_is_an_annotated_tag_whose_tarball_the_9_1_repos_pin_by_hash(upstream):
    mirror: Path = upstream["mirror"]  # type: ignore[assignment]
    cmake = mirror / "cann/cmake.git"
    assert git(cmake, "cat-file", "-t", "master-026") == "tag"
    assert git(cmake, "rev-parse", "master-026^{commit}") != git(cmake, "rev-parse", "master")
    tarball = mirror_path(mirror, cmake_tarball_url("master-026")).read_bytes()
    assert tarball == pinned_cmake_tarball("master-026")
    ot = mirror / "cann/ops-transformer.git"
    fetch = git(ot, "show", "9.1.0:cmake/fetch_cann_cmake.cmake")
    assert f"URL_HASH SHA256={hashlib.sha256(tarball).hexdigest()}" in fetch
    assert fetch == git(mirror / "cann/opbase.git", "show", "9.1.0:cmake/fetch_cann_cmake.cmake")
    # the tarball holds the tag's tree under one top folder
    with tarfile.open(fileobj=io.BytesIO(tarball)) as tar:
        names = {m.name for m in tar.getmembers() if m.isfile()}
    tree: List[str] = git(cmake, "ls-tree", "-r", "--name-only", "master-026").splitlines()
    assert names == {f"cmake-master-026/{name}" for name in tree}
    assert "cmake-master-026/function/prepare.cmake" in names
