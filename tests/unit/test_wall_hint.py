"""A build that stops at a sandbox wall is told which wall and where it is listed: a toolkit
part's in doctor's recipe.wall row, a third-party stand-in's where --accept-stand-in took it."""

from cannbuild.hints import match_hint
from cannbuild.sandbox.third_party import _stub

# the first error of real ops-transformer v9.0.0 past op_build (common/stub/op_tiling)
NLOHMANN = (
    "third_party/json/include/nlohmann/json.hpp:3:2: error: #error "
    + _stub("nlohmann json 3.11.3").split('#error "', 1)[1].split("\n", 1)[0]
)


def test_a_third_party_stand_in_wall_names_the_archive_and_the_acceptance():
    hint = match_hint(["[ 40%] Building CXX object runtime_kb_api.cpp.o", NLOHMANN])
    assert hint is not None
    assert "wall nlohmann (nlohmann json 3.11.3)" in hint and "--accept-stand-in" in hint
    # the reason ends where the `#error "..."` quote closes, not with the quote
    assert "offline bundle. Everything before it" in hint, hint


def test_a_toolkit_wall_names_doctors_row():
    line = "cannbuild sandbox wall: hcc (the device compiler): not in any open repository"
    hint = match_hint(["make[2]: *** [kernel] Error 1", line])
    assert hint is not None and "recipe.wall.hcc" in hint


def test_the_kernel_compile_without_asc_opc_tool_is_the_asc_opc_wall():
    # the first error of real ops-cv 9.1.0 (and ops-math, ops-cv 9.0.0) past their host link
    line = (
        "python3: can't open file '/ws/.cannbuild/sandbox/sysroot/usr/local/Ascend/cann-9.1.0/"
        "python/site-packages/asc_opc_tool/opc.py': [Errno 2] No such file or directory"
    )
    hint = match_hint(["Build started: asc_opc upsample_bilinear2d.py", line, "Error 2"])
    assert hint is not None and "wall asc_opc" in hint and "wheels" in hint


def test_a_patch_step_over_a_stand_in_archive_names_the_project_and_the_stand_in():
    # real opbase 8.5.0 over the stand-in protobuf-25.1.tar.gz (its protobuf_src patch step)
    log = [
        "[  3%] Performing patch step for 'protobuf_src'",
        "patching file CMakeLists.txt",
        "can't find file to patch at input line 58",
        "Perhaps you used the wrong -p or --strip option?",
        "make[2]: *** [CMakeFiles/protobuf_src.dir/build.make:114: protobuf_src-prefix/src/"
        "protobuf_src-stamp/protobuf_src-patch] Error 1",
    ]
    hint = match_hint(log)
    assert hint is not None and "the patch step of protobuf_src" in hint, hint
    assert "--accept-stand-in" in hint and "mirror rule" in hint
    # a patch step that applies is no such failure
    assert "patch step" not in (match_hint(log[:2] + log[4:]) or "")
