"""The sandbox's op_build (kernels/opbuild/op_build.cpp, sandbox/opbuild.py) over the
release's own OpDef implementation, compiled from the real ge and metadef at v9.0.0.

Needs the real repositories (`CANNBUILD_UPSTREAM_REPOS`, README: The real repositories): the OpDef
classes are theirs, and the stand-in repositories hold only stubs of the headers.  The
host side is laid out from them as a sandbox does (sandbox/hostside.py); a small operator
definition in the shape of the real ones (`op_host/<op>_def.cpp`, OP_ADD) is compiled into
a library the way cmake/opbuild.cmake does and given to op_build with the environment the
real CMake rules set.
"""

from __future__ import annotations

import io
import os
import subprocess
import tarfile
from pathlib import Path
from typing import Dict, Tuple

import pytest

from cannbuild.hints import match_hint
from cannbuild.host.toolkit import host_arch
from cannbuild.sandbox.hostside import lay_out_host_side
from cannbuild.sandbox.opbuild import LIBREGISTER, OP_BUILD

ENV = "CANNBUILD_UPSTREAM_REPOS"
# repo -> (tag, the folders its headers, packaging data and OpDef sources are in)
REPOS = {
    "ge": ("v9.0.0", ("inc", "graph_metadef/register", "scripts", "cmake")),
    "metadef": ("v9.0.0", ()),
    "runtime": ("v9.0.0", ("include", "pkg_inc", "scripts", "cmake")),
    "opbase": ("v9.0.0", ()),
    "libboundscheck": ("v1.1.16", ()),
}

pytestmark = pytest.mark.skipif(
    not os.environ.get(ENV),
    reason=f"{ENV} names no folder of the real CANN repositories (see README: The real repositories)",
)

DEF = """
#include "register/op_def_registry.h"

namespace ops {
class AddCustom : public OpDef {
public:
    explicit AddCustom(const char *name) : OpDef(name)
    {
        this->Input("x").ParamType(REQUIRED).DataType({ge::DT_FLOAT16, ge::DT_BF16})
            .Format({ge::FORMAT_ND, ge::FORMAT_ND});
        this->Input("seq_len").ParamType(OPTIONAL).DataType({ge::DT_INT64, ge::DT_INT64})
            .Format({ge::FORMAT_ND, ge::FORMAT_ND}).ValueDepend(OPTIONAL);
        this->Output("y").ParamType(REQUIRED).DataType({ge::DT_FLOAT16, ge::DT_BF16})
            .Format({ge::FORMAT_ND, ge::FORMAT_ND});
        this->Attr("alpha").AttrType(OPTIONAL).Float(1.5);
        this->Attr("layout").AttrType(REQUIRED).String();
        OpAICoreConfig config;
        config.DynamicShapeSupportFlag(true).ExtendCfgInfo("opFile.value", "add_custom_apt");
        this->AICore().AddConfig("ascend910_93", config);
    }
};
OP_ADD(AddCustom);
}  // namespace ops
"""


def _git_dir(top: Path, name: str) -> Path:
    for candidate in (top / f"{name}.git", top / name, *sorted(top.glob(f"*+{name}/repo"))):
        if (candidate / "HEAD").is_file() or (candidate / ".git").exists():
            return candidate
    pytest.fail(f"{ENV}={top} has no repository of {name}")


def _checkout(top: Path, name: str, into: Path) -> Tuple[Path, str]:
    """The parts of the repository at its tag the host side is laid out from (ge and
    runtime whole are 160 MB each)."""
    tag, folders = REPOS[name]
    git = ["git", "--git-dir", str(_git_dir(top, name))]
    commit = subprocess.run(
        [*git, "rev-parse", f"{tag}^{{commit}}"], capture_output=True, text=True, check=True
    ).stdout.strip()
    tar = subprocess.run(
        [*git, "archive", commit, "--", *folders], capture_output=True, check=True
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(tar)) as archive:
        archive.extractall(into / name)
    return into / name, commit


@pytest.fixture(scope="module")
def toolkit(tmp_path_factory) -> Path:
    """A toolkit home whose host side is laid out from the real repositories at v9.0.0,
    with libregister and op_build compiled as a sandbox compiles them."""
    top = Path(os.environ[ENV]).expanduser().resolve()
    work = tmp_path_factory.mktemp("opbuild")
    checkouts: Dict[str, Tuple[Path, str]] = {n: _checkout(top, n, work / "src") for n in REPOS}
    home = work / "cann-9.0.0"
    laid = lay_out_host_side(work, home, host_arch(), "9.0.0", checkouts)
    assert OP_BUILD in laid.record.written
    return home


def _library(toolkit: Path, tmp_path: Path, source: str) -> Path:
    """The operator definition library, as cmake/opbuild.cmake's gen_op_host_<prefix>."""
    include = toolkit / f"{host_arch()}-linux/include"
    lib64 = toolkit / f"{host_arch()}-linux/lib64"
    (tmp_path / "add_custom_def.cpp").write_text(source)
    library = tmp_path / "libgen_op_host_aclnn.so"
    flags = ["-std=c++17", "-fPIC", "-shared", "-fno-common", f"-I{include}"]
    flags += [f"-I{include / 'external'}", f"-L{lib64}", f"-Wl,-rpath,{lib64}"]
    source = tmp_path / "add_custom_def.cpp"
    subprocess.run(["c++", *flags, "-o", str(library), str(source), "-lregister"], check=True)
    return library


def _op_build(toolkit: Path, library: Path, out: Path, project: str = "aclnn"):
    env = dict(os.environ, OPS_PROTO_SEPARATE="1", OPS_PROJECT_NAME=project, OPS_ACLNN_GEN="1")
    env["OPS_PRODUCT_NAME"] = '"ascend910_93;"'
    return subprocess.run(
        [str(toolkit / OP_BUILD), str(library), str(out)], capture_output=True, text=True, env=env
    )


def test_op_build_writes_the_files_the_cmake_rules_expect_from_the_registrations(toolkit, tmp_path):
    assert (toolkit / LIBREGISTER.format(arch=host_arch())).stat().st_size > 0
    out = tmp_path / "autogen"
    done = _op_build(toolkit, _library(toolkit, tmp_path, DEF), out)
    assert done.returncode == 0, done.stderr
    written = sorted(p.name for p in out.iterdir())
    assert written == [
        "aclnn_add_custom.cpp",
        "aclnn_add_custom.h",
        "add_custom_proto.cpp",
        "add_custom_proto.h",
        "aic-ascend910_93-ops-info.ini",
    ]
    ini = (out / "aic-ascend910_93-ops-info.ini").read_text().splitlines()
    assert ini[0] == "[AddCustom]"
    for line in (
        "input0.dtype=float16,bfloat16",
        "input1.valueDepend=optional",
        "output0.name=y",
        "attr.list=alpha,layout",
        "attr_alpha.defaultValue=1.5",
        "attr_layout.paramType=required",
        "dynamicShapeSupport.flag=true",
        "opFile.value=add_custom_apt",
    ):
        assert line in ini
    header = (out / "aclnn_add_custom.h").read_text()
    assert "aclnnAddCustomGetWorkspaceSize(" in header
    assert "const aclIntArray *seqLenOptional" in header  # a value-depend input: an array
    assert "double alphaOptional" in header and "char *layout" in header
    proto = (out / "add_custom_proto.h").read_text()
    assert ".OPTIONAL_INPUT(seq_len, TensorType({DT_INT64}))" in proto
    assert ".ATTR(alpha, Float, 1.5)" in proto
    # what the next build step compiles, compiles against the toolkit
    include = toolkit / f"{host_arch()}-linux/include"
    for source in ("aclnn_add_custom.cpp", "add_custom_proto.cpp"):
        flags = ["-std=c++17", "-fsyntax-only", f"-I{out}", f"-I{include}"]
        compiled = subprocess.run(
            ["c++", *flags, f"-I{include / 'external'}", str(out / source)],
            capture_output=True,
            text=True,
        )
        assert compiled.returncode == 0, compiled.stderr


def test_the_inner_project_writes_aclnn_inner_sources(toolkit, tmp_path):
    out = tmp_path / "inner"
    done = _op_build(toolkit, _library(toolkit, tmp_path, DEF), out, project="aclnnInner")
    assert done.returncode == 0, done.stderr
    assert "aclnnInnerAddCustomGetWorkspaceSize(" in (out / "aclnnInner_add_custom.h").read_text()


def test_a_library_with_no_registration_fails_naming_it(toolkit, tmp_path):
    library = _library(toolkit, tmp_path, '#include "register/op_def_registry.h"\n')
    done = _op_build(toolkit, library, tmp_path / "out")
    assert done.returncode != 0
    assert str(library) in done.stderr and "registers no operator definition" in done.stderr
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").iterdir())


def test_a_library_that_cannot_be_loaded_fails_naming_it(toolkit, tmp_path):
    missing = tmp_path / "libgen_op_host_aclnn.so"
    done = _op_build(toolkit, missing, tmp_path / "out")
    assert done.returncode == 1 and str(missing) in done.stderr


def test_the_aicpu_mode_is_a_named_wall(toolkit, tmp_path):
    """ops-math 9.1.0 runs `op_build LIB OUT --aicpu` for its AICPU operators: a wall the
    build's hint names, not a usage error."""
    library = _library(toolkit, tmp_path, DEF)
    done = subprocess.run(
        [str(toolkit / OP_BUILD), str(library), str(tmp_path / "out"), "--aicpu"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 1
    assert match_hint([done.stderr]) is not None
    assert "the build reached the sandbox's wall op_build" in (match_hint([done.stderr]) or "")
