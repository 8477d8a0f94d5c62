"""Stand-in `opbase`, `ops-transformer`, `cmake` and `ops-tensor` git repositories (and
ops-math, ops-nn and ops-cv, siblings.py) and the third-party mirror.

They are served from `<sandbox>/mirror/` laid out like `https://gitcode.com/`
(`cann/opbase.git`, `cann-src-third-party/makeself/releases/...`, the OBS host's
files under a folder of its name), so the pipeline reaches them through ordinary
mirror rules.  Commits have fixed authors and dates: the same cannbuild makes the
same commit ids.  Up to 9.0 the stand-ins' `cmake/third_party/*.cmake` download the
third-party archives (sandbox/third_party.py) as the real ones do, with the hashes of
the archives the mirror serves; from 9.1 the stand-in `cann/cmake` does
(sandbox/sharedrepos.py).
"""

from __future__ import annotations

import os
import shutil
import tarfile
from pathlib import Path
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from .. import usercache
from ..bounded import ARCHIVE, open_binary
from ..phases import PhaseSink, no_phases
from ..render.templates import file_env
from ..resources import data_dir
from ..safefs import discard
from . import files
from .files import CommandLog, write, write_tree
from .flavors import OpsTransformerFlavor
from .releases import Commit, StandIns, standins
from .sharedrepos import (
    LIBBOUNDSCHECK_URL,
    cann_cmake_files,
    cmake_tarball,
    cmake_tarball_url,
    ops_tensor_files,
    sha256,
)
from .siblings import render_sibling
from .third_party import mirror_path, standin_archives, write_mirror
from .toolkit_files import stand_in_repo_files

MIRROR_TAR = "mirror.tar"


def git_env(date: str) -> Dict[str, str]:
    # The user's GIT_* settings (an author, a hooks path, a global config) would change the commit
    # ids; only what is set below counts.
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(
        GIT_AUTHOR_NAME="CANN sandbox",
        GIT_AUTHOR_EMAIL="sandbox@cannbuild.invalid",
        GIT_COMMITTER_NAME="CANN sandbox",
        GIT_COMMITTER_EMAIL="sandbox@cannbuild.invalid",
        GIT_AUTHOR_DATE=date,
        GIT_COMMITTER_DATE=date,
        # No system or user config either: a `commit.gpgsign` or template there must not apply.
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_GLOBAL=os.devnull,
    )
    return env


def _clear(work: Path) -> None:
    # Each commit is the whole state of the repository at that ref, not a diff to the last.
    for entry in work.iterdir():
        if entry.name != ".git":
            discard(entry)


def _render_commit(work: Path, commit: Commit, extra: Mapping[str, Any]) -> None:
    """Replace the work tree's content with this commit's files."""
    _clear(work)
    templates = data_dir("templates") / "sandbox"
    kernels = data_dir("kernels")
    env = file_env(templates)
    flavor = commit.flavor
    assert flavor is not None, commit.message  # opbase and ops-transformer have one
    modules, test_only = flavor.modules, flavor.test_modules
    archives = {key: a.context() for key, a in standin_archives().items()}
    ctx: Dict[str, Any] = {
        "flavor": flavor,
        "ref": flavor.ref,
        "tp": archives,
        "modules": modules,
        "repo": commit.repo,
        **extra,
    }
    repo = commit.repo

    def render(src: str, dst: str, executable: bool = False) -> None:
        write(work / dst, env.get_template(src).render(**ctx), executable=executable)

    def copy(src: Path, dst: str) -> None:
        files.copy(src, work / dst)

    copy(templates / "common" / "gitignore", ".gitignore")
    if flavor.cann_cmake:
        # 9.1: cmake/fetch_cann_cmake.cmake (the same file in both repos) brings cann/cmake,
        # whose add_cann_third_party declares the archives; version.cmake its dependencies.
        render("common/fetch_cann_cmake.cmake.j2", "cmake/fetch_cann_cmake.cmake")
        copy(templates / "common" / "sandbox_network.cmake", "cmake/sandbox_network.cmake")
        render("common/version.cmake.j2", "version.cmake")
    else:
        # The real repos keep one .cmake per archive in cmake/third_party/; the stand-ins do too,
        # so sources/archives.py reads them exactly as it reads the real ones.
        render("common/third_party.cmake.j2", "cmake/third_party/third_party.cmake")
    for module in modules + test_only:
        render(f"{repo}/cmake/third_party/{module}.cmake.j2", f"cmake/third_party/{module}.cmake")
    if flavor.deps and not flavor.cann_cmake:
        # A stand-in for cann-cmake's scripts/version/check_build_dependencies.py, which reads
        # share/info/<pkg>/version.info.
        copy(
            templates / "common" / "check_build_dependencies.py",
            "scripts/check_build_dependencies.py",
        )
    readme = [
        f"# {repo} (cannbuild sandbox stand-in)",
        "",
        f"Emulates {repo} at {flavor.label}: the same build.sh options, messages and artifacts,",
        "compiling a CPU FlashAttention operator against the sandbox's emulated CANN.",
    ]
    if commit.note:
        readme += ["", commit.note]
    write(work / "README.md", "\n".join(readme) + "\n")
    if repo == "opbase":
        render("opbase/build.sh.j2", "build.sh", executable=True)
        render("opbase/CMakeLists.txt.j2", "CMakeLists.txt")
        render("opbase/version.info.j2", "version.info")
        render(
            "opbase/scripts/package/install.sh.j2", "scripts/package/install.sh", executable=True
        )
        copy(templates / "opbase/scripts/package/help.info", "scripts/package/help.info")
        copy(kernels / "emu/include/aclnn", "include/nnopbase/aclnn")
        copy(kernels / "emu/pkg_inc/emu", "pkg_inc/emu")
        copy(kernels / "standin/opbase/pkg_inc/op_common", "pkg_inc/op_common")
        copy(kernels / "emu/nnopbase/acl_meta.cpp", "src/nnopbase/acl_meta.cpp")
        copy(kernels / "standin/opbase/src/op_common/op_util.cpp", "src/op_common/op_util.cpp")
    else:
        render("ops-transformer/build.sh.j2", "build.sh", executable=True)
        render("ops-transformer/CMakeLists.txt.j2", "CMakeLists.txt")
        write(work / "version.info", f"Version={flavor.version}\n")
        # From v9.0.0 ops-transformer pins opbase as source: cmake/third_party/opbase.cmake holds
        # `set(OPBASE_TAG_ID <40 hex>)`.
        if isinstance(flavor, OpsTransformerFlavor) and flavor.opbase_mode == "source":
            render(
                "ops-transformer/cmake/third_party/opbase.cmake.j2",
                "cmake/third_party/opbase.cmake",
            )
        if flavor.cann_cmake:
            # 9.1 pins ops-tensor as source too (OPTENSOR_TAG_ID); cmake/third_party/ holds
            # only the two pins and a .gitkeep (docs/upstream-9.1.md §3c).
            render(
                "ops-transformer/cmake/third_party/ops-tensor.cmake.j2",
                "cmake/third_party/ops-tensor.cmake",
            )
            write(work / "cmake/third_party/.gitkeep", "")
        for name in ("install.sh", "help.info", "gen_version_info.sh"):
            copy(templates / "ops-transformer/scripts/custom" / name, f"scripts/custom/{name}")
        # the toolkit's find_package modules and the calls (cmake/dependencies.cmake), in the real
        # modules' shape: what the derived check reads (build/derived.py)
        render("ops-transformer/cmake/dependencies.cmake.j2", "cmake/dependencies.cmake")
        for finder in sorted((templates / "ops-transformer/cmake/modules").iterdir()):
            if finder.suffix == ".j2":
                render(
                    f"ops-transformer/cmake/modules/{finder.name}", f"cmake/modules/{finder.stem}"
                )
            else:
                copy(finder, f"cmake/modules/{finder.name}")
        fa = kernels / "standin/flash_attention_score"
        for part in sorted(fa.iterdir()):
            if part.name != "examples":
                copy(part, f"attention/flash_attention_score/{part.name}")
        examples: Sequence[Tuple[str, str]] = getattr(flavor, "examples", ())
        # The real example file names at each ref (8.3 named them differently), with the stand-in
        # sources.
        for name, source in examples:
            copy(fa / "examples" / source, f"attention/flash_attention_score/examples/{name}")
        # The doc diagnose reads its B, N, S, D limits and dtypes from (约束说明 section).
        render(
            "ops-transformer/docs/aclnnFlashAttentionScoreV2.md.j2",
            "attention/flash_attention_score/docs/aclnnFlashAttentionScoreV2.md",
        )


def build_repo(
    name: str,
    history: Sequence[Commit],
    work: Path,
    bare: Path,
    log: CommandLog,
    render: Callable[[Path, Commit], None],
) -> List[str]:
    """Create the repository's history (`render(work, commit)` lays out a commit's files);
    returns the commit ids in order."""
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    env = git_env(history[0].date)
    log.run(
        # master, as the real repos' default branch is named.
        ["git", "-c", "init.defaultBranch=master", "init", "-q", str(work)],
        env=env,
        what=f"creating {name}",
    )
    commits: List[str] = []
    for commit in history:
        render(work, commit)
        env = git_env(commit.date)
        log.run(["git", "add", "-A"], cwd=work, env=env, what=f"staging {name}")
        log.run(
            ["git", "commit", "-q", "-m", commit.message],
            cwd=work,
            env=env,
            what=f"committing {name}",
        )
        sha = log.run(["git", "rev-parse", "HEAD"], cwd=work, env=env).strip()
        commits.append(sha)
        for tag in commit.tags:
            log.run(
                # An annotated tag is an object with its own date: the fixed one above keeps its id
                # reproducible.
                ["git", "tag", "-a", tag, "-m", f"{name} {tag}"],
                cwd=work,
                env=env,
                what=f"tagging {name}",
            )
        for branch in commit.branches:
            log.run(["git", "branch", branch], cwd=work, env=env, what=f"branching {name}")
    if bare.exists():
        shutil.rmtree(bare)
    bare.parent.mkdir(parents=True, exist_ok=True)
    log.run(
        # Served bare at `mirror/cann/<repo>.git`, the path `https://gitcode.com/cann/<repo>.git`
        # maps to under a mirror rule.  Through git's transport (--no-local) its objects arrive
        # as one pack, and without the sample hooks: the per-user cache's tar of the mirror
        # holds 189 members instead of 1,669, and every fresh sandbox unpacks it (0.8 s less).
        ["git", "clone", "-q", "--bare", "--no-local", "--template=", str(work), str(bare)],
        env=git_env(history[-1].date),
        what=f"publishing {name}",
    )
    return commits


def pinned_cmake_tarball(tag: str) -> bytes:
    """cmake-<tag>.tar.gz as the mirror serves it: the stand-in cann/cmake at the tag."""
    archives = {key: a.context() for key, a in standin_archives().items()}
    return cmake_tarball(cann_cmake_files(tag, archives), tag)


def build_repos(
    mirror: Path, build_dir: Path, log: CommandLog, data: Optional[StandIns] = None
) -> Dict[str, List[str]]:
    """Every stand-in repository the sandbox's data declares, published under `mirror`;
    returns each one's commit ids in order."""
    data = data or standins()
    cann = mirror / "cann"
    archives = {key: a.context() for key, a in standin_archives().items()}
    built: Dict[str, List[str]] = {}

    def publish(
        name: str, render: Callable[[Path, Commit], None], bare: Optional[Path] = None
    ) -> None:
        history = data.history(name)
        if history:
            where = bare or cann / f"{name}.git"
            built[name] = build_repo(name, history, build_dir / name, where, log, render)

    publish("ops-tensor", lambda work, c: _tree(work, ops_tensor_files(c.state)))
    publish("cmake", lambda work, c: _tree(work, cann_cmake_files(c.state, archives)))
    # Each pinned tag's tarball, which the 9.1 repos take with its SHA256
    # (fetch_cann_cmake.cmake:18-23).
    tarball_sha256: Dict[str, str] = {}
    for tag in sorted({f.cmake_tag for f in data.flavors() if f.cmake_tag}):
        tarball = pinned_cmake_tarball(tag)
        target = mirror_path(mirror, cmake_tarball_url(tag))
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(tarball)
        tarball_sha256[tag] = sha256(tarball)

    def pins(commit: Commit) -> Dict[str, Any]:
        """What a commit's CMake pins (flavor.opbase_pin and the rest), as commit ids: the
        real repos pin commits that are not tags (ops-transformer v9.0.0 929902e upstream)."""
        flavor = commit.flavor
        assert flavor is not None
        extra: Dict[str, Any] = {}
        if flavor.opbase_pin:
            extra["opbase_tag_id"] = built["opbase"][
                data.index("opbase", flavor.opbase_pin, commit)
            ]
        if flavor.optensor_pin:
            at = data.index("ops-tensor", flavor.optensor_pin, commit)
            extra["optensor_tag_id"] = built["ops-tensor"][at]
            extra["optensor_api"] = data.history("ops-tensor")[at].state
        if flavor.cmake_tag:
            extra["cann_cmake_tag"] = flavor.cmake_tag
            extra["cann_cmake_sha256"] = (
                tarball_sha256[flavor.cmake_tag] if flavor.cann_cmake_hash else ""
            )
            extra["cann_cmake_in_3rd"] = not flavor.cann_cmake_hash
        return extra

    publish("opbase", lambda work, c: _render_opbase(work, c, pins(c)))
    publish("ops-transformer", lambda work, c: _render_commit(work, c, pins(c)))
    for name in data.toolkit_repos:
        gitee = mirror_path(mirror, LIBBOUNDSCHECK_URL) if name == "libboundscheck" else None
        publish(name, _toolkit_renderer(name), gitee)

    def sibling(work: Path, commit: Commit) -> None:
        _clear(work)
        render_sibling(work, commit, pins(commit))

    for name in ("ops-math", "ops-nn", "ops-cv"):
        publish(name, sibling)
    return built


def _tree(work: Path, files: Mapping[str, str]) -> None:
    _clear(work)
    write_tree(work, files)


def _render_opbase(work: Path, commit: Commit, extra: Mapping[str, Any]) -> None:
    """A stand-in opbase commit; one that makes a package (from v8.5.0, which the toolkit
    holds) with the headers its package installs and the packaging XML that says where."""
    _render_commit(work, commit, extra)
    if getattr(commit.flavor, "has_pkg", False):
        write_tree(work, stand_in_repo_files("opbase", register_in_ge=False))


def _toolkit_renderer(name: str) -> Callable[[Path, Commit], None]:
    def render(work: Path, commit: Commit) -> None:
        _clear(work)
        write(work / "README.md", f"cannbuild sandbox stand-in for {name}: {commit.message}\n")
        write_tree(work, stand_in_repo_files(name, commit.register_in_ge))

    return render


def lay_out_mirror(
    mirror: Path, build_dir: Path, log: CommandLog, key: str, phases: PhaseSink = no_phases
) -> None:
    """The stand-in repositories and third-party archives under `mirror`: made once per user
    and machine (cannbuild/usercache.py, one tar keyed by `key`, create.mirror_key) and
    unpacked into every later sandbox; made in place where there is no cache of the user's
    own.  Three seconds of git per fresh sandbox otherwise."""

    def make(into: Path) -> None:
        build_repos(into, build_dir, log)
        build_third_party(into)

    root = usercache.cache_root(os.environ)
    if root is None:
        phases("making the stand-in source repositories (git; no per-user cache here)")
        make(mirror)
        return

    def pack(out: Path) -> None:
        made = build_dir.parent / "mirror"
        shutil.rmtree(made, ignore_errors=True)
        make(made)
        with open(out / MIRROR_TAR, "wb") as fh, tarfile.open(fileobj=fh, mode="w") as tar:
            tar.add(made, arcname=".")
        shutil.rmtree(made)

    phases(f"making the stand-in source repositories (git), once per machine (kept in {root})")
    entry, reused = usercache.cached(root, "mirror", key[:32], pack)
    kind = ARCHIVE.named("the per-user cache's mirror")  # checked against its manifest
    with open_binary(entry / MIRROR_TAR, kind) as fh, tarfile.open(fileobj=fh) as tar:
        # the user's own cache entry, checked against its manifest: `data` refuses links out
        # and absolute names all the same, where this Python has it
        if hasattr(tarfile, "data_filter"):
            tar.extractall(mirror, filter="data")
        else:  # pragma: no cover - Python < 3.9.17
            tar.extractall(mirror)
    with open(log.path, "a", encoding="utf-8") as out:
        out.write(f"mirror {'unpacked from' if reused else 'made into'} {entry}\n")


def build_third_party(mirror: Path) -> List[Path]:
    """The third-party archives at the paths their upstream URLs name under the mirror."""
    return write_mirror(mirror, standin_archives())
