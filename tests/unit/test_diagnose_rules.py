"""diagnose's rows on small real trees: a vendor folder with a compiled libcust_opapi.so,
an op_impl config, a checkout with the operator's docs; each row fails when its cause is
there, and says where its rule comes from."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from dataclasses import replace
from pathlib import Path
from typing import Dict, Optional, Sequence

import pytest
from llamaprofile import Llama, analyse, generate

from cannbuild.diagnose import BUILTIN_SOURCE, DiagnoseInputs, diagnose, operator_facts
from cannbuild.diagnose.profile_rows import fa_shape_checks
from cannbuild.errors import UsageError
from cannbuild.host.check import Check
from cannbuild.profile.shape import AttentionShape, shape_from_flags

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "profiler"
SOC = "ascend910b"
FA_EXPORTS = (
    'extern "C" int aclnnFlashAttentionScoreGetWorkspaceSize() { return 0; }\n'
    'extern "C" int aclnnFlashAttentionScore() { return 0; }\n'
)
# The shape of the real docs (ops-transformer v8.5.0 to 9.1.0): the parameters in an HTML table,
# one cell a line, the constraints as bullets.
DOC = """# aclnnFlashAttentionScoreV2

## aclnnFlashAttentionScoreV2GetWorkspaceSize

- **参数说明**
  <table style="undefined;table-layout: fixed; width: 1452px"><colgroup>
    <col style="width: 174px">
    </colgroup>
    <thead>
      <tr>
        <th>参数名</th>
        <th>输入/输出</th>
        <th>使用说明</th>
        <th>数据类型</th>
        <th>数据格式</th>
      </tr></thead>
    <tbody>
      <tr>
        <td>query</td>
        <td>输入</td>
        <td>数据类型与key/value的数据类型一致。</td>
        <td>{dtypes}</td>
        <td>ND</td>
      </tr>
    </tbody>
  </table>

## 约束说明

- 关于数据shape的约束，以inputLayout的BSND、BNSD为例（BSH、SBH下H=N\\*D），其中：
    -   B：取值范围为1\\~2M。
    -   N：取值范围为1\\~256。
    -   S：取值范围为1\\~1M。
    -   D：取值范围为1\\~{d}。

## 调用示例

- D：取值范围为1\\~9。
"""


# the library g++ built from a source, by the source: most vendors export the same symbols,
# and a compile is 0.1 s of CPU (the same bytes, copied, in every test after the first)
_BUILT: Dict[str, bytes] = {}


def compile_so(path: Path, source: str) -> Path:
    if shutil.which("g++") is None:
        pytest.skip("needs g++ to build a library to inspect")
    path.parent.mkdir(parents=True, exist_ok=True)
    src = path.with_suffix(".cpp")
    src.write_text(source)
    built = _BUILT.get(source)
    if built is None:
        subprocess.run(["g++", "-shared", "-fPIC", str(src), "-o", str(path)], check=True)
        _BUILT[source] = path.read_bytes()
    else:
        path.write_bytes(built)
        path.chmod(0o755)
    return path


def vendor(
    root: Path,
    dtypes: Optional[str] = "float16,bfloat16,float,float",
    soc: str = SOC,
    exports: str = FA_EXPORTS,
) -> Path:
    if root.exists():
        return root
    compile_so(root / "op_api" / "lib" / "libcust_opapi.so", exports)
    (root / "bin").mkdir(parents=True)
    (root / "bin" / "set_env.bash").write_text(
        f"export ASCEND_CUSTOM_OPP_PATH={root}:$ASCEND_CUSTOM_OPP_PATH\n"
    )
    tbe = root / "op_impl" / "ai_core" / "tbe"
    (tbe / "kernel" / soc / "flash_attention_score").mkdir(parents=True)
    op: Dict[str, object] = {"opFile": {"value": "flash_attention_score"}}
    if dtypes is not None:
        op["input0"] = {"dtype": dtypes, "format": "ND", "name": "query", "paramType": "required"}
    config = tbe / "config" / soc / f"aic-{soc}-ops-info.json"
    config.parent.mkdir(parents=True)
    config.write_text(json.dumps({"FlashAttentionScore": op}))
    return root


def line_of(doc: Path, text: str) -> int:
    return next(n for n, line in enumerate(doc.read_text().splitlines(), 1) if text in line)


def checkout(
    root: Path, d: int = 768, tiling: bool = False, dtypes: str = "FLOAT16、BFLOAT16、FLOAT32"
) -> Path:
    if root.exists():
        return root
    op = root / "attention" / "flash_attention_score"
    (op / "docs").mkdir(parents=True)
    (op / "docs" / "aclnnFlashAttentionScoreV2.md").write_text(
        DOC.format(d=d, dtypes=dtypes), encoding="utf-8"
    )
    if tiling:
        (op / "op_host" / "arch32").mkdir(parents=True)
        (op / "op_host" / "arch32" / "tiling.cpp").write_text(
            "#include <x>\n\nstatic const int64_t FRACTAL_NUM = 16L;\n"
        )
    return root


def inputs(
    tmp_path: Path,
    shape: Optional[AttentionShape] = None,
    *,
    env=None,
    vendor_dir=None,
    src=None,
    profile=None,
    opp=None,
) -> DiagnoseInputs:
    v = vendor_dir or vendor(tmp_path / "vendors" / "custom_transformer")
    return DiagnoseInputs(
        vendor_dir=v,
        soc=SOC,
        checkout=src if src is not None else checkout(tmp_path / "src"),
        env={"ASCEND_CUSTOM_OPP_PATH": str(v)} if env is None else env,
        opp_path=opp,
        shape=shape or AttentionShape(),
        profile=profile,
        torch_npu="2.13.0",
    )


def row(checks: Sequence[Check], cid: str) -> Check:
    return next(c for c in checks if c.id == cid)


def test_a_package_found_first_on_the_path_passes_every_registration_row(tmp_path):
    checks = diagnose(inputs(tmp_path))
    assert [c.status for c in checks if c.id.startswith("registration")] == ["pass"] * 5
    assert "this package's libcust_opapi.so" in row(checks, "registration.resolution").detail


def test_a_vendor_missing_from_the_path_fails_env_and_resolution(tmp_path):
    checks = diagnose(inputs(tmp_path, env={"ASCEND_CUSTOM_OPP_PATH": "/opt/other"}))
    env = row(checks, "registration.env")
    assert env.status == "fail" and "'/opt/other'" in env.detail
    assert env.hint == f"source {tmp_path}/vendors/custom_transformer/bin/set_env.bash"
    assert row(checks, "registration.resolution").status == "fail"


def test_another_vendor_earlier_on_the_path_shadows_the_package(tmp_path):
    ours = vendor(tmp_path / "vendors" / "custom_transformer")
    other = vendor(tmp_path / "vendors" / "other_transformer")
    silent = vendor(
        tmp_path / "vendors" / "silent", exports='extern "C" int unrelated() { return 0; }'
    )
    path = f"{silent}:{other}:{ours}"
    checks = diagnose(inputs(tmp_path, vendor_dir=ours, env={"ASCEND_CUSTOM_OPP_PATH": path}))
    res = row(checks, "registration.resolution")
    assert res.status == "fail"
    assert f"{other}/op_api/lib/libcust_opapi.so" in res.detail and "shadows" in res.detail
    assert f"take {other} out of ASCEND_CUSTOM_OPP_PATH" in (res.hint or "")
    assert row(checks, "registration.env").status == "pass"  # ours is there, just not first


def test_without_the_env_the_toolkits_default_vendors_are_searched(tmp_path):
    opp = tmp_path / "opp"
    other = vendor(opp / "vendors" / "customize")
    (opp / "vendors" / "config.ini").write_text("load_priority=customize\n")
    checks = diagnose(inputs(tmp_path, env={}, opp=str(opp)))
    res = row(checks, "registration.resolution")
    assert (
        res.status == "fail"
        and "default vendor customize" in res.detail
        and str(other) in res.detail
    )


def test_a_package_for_another_soc_or_without_the_entry_points_fails(tmp_path):
    v = vendor(
        tmp_path / "v", soc="ascend910_93", exports='extern "C" int aclnnOther() { return 0; }'
    )
    checks = diagnose(inputs(tmp_path, vendor_dir=v))
    soc = row(checks, "registration.soc")
    assert soc.status == "fail" and "built for ascend910_93" in soc.detail
    assert soc.hint == f"Rebuild for this SoC: cannbuild install --soc {SOC}"
    assert (
        "does not export aclnnFlashAttentionScoreGetWorkspaceSize"
        in row(checks, "registration.exports").detail
    )


def test_no_package_is_one_failing_row_with_the_install_command(tmp_path):
    checks = diagnose(inputs(tmp_path, vendor_dir=tmp_path / "nothing", env={}))
    regs = [c for c in checks if c.id.startswith("registration")]
    assert [(c.id, c.status) for c in regs] == [("registration.package", "fail")]
    assert "cannbuild install" in (regs[0].hint or "")


def test_fp32_fails_where_the_installed_config_lists_no_float(tmp_path):
    v = vendor(tmp_path / "v", dtypes="float16,bfloat16,float16,bfloat16")
    checks = diagnose(inputs(tmp_path, shape_from_flags({"dtype": "float32"}), vendor_dir=v))
    dtype = row(checks, "dtype")
    assert dtype.status == "fail" and "fp16, bf16" in dtype.detail
    assert f"aic-{SOC}-ops-info.json" in dtype.detail and "bf16 or fp16" in (dtype.hint or "")
    ok = diagnose(inputs(tmp_path, AttentionShape(dtype="bf16"), vendor_dir=v))
    assert row(ok, "dtype").status == "pass"


def test_the_dtypes_fall_back_to_the_docs_then_to_the_built_in_list(tmp_path):
    v = vendor(tmp_path / "v", dtypes=None)  # a config without per-input dtypes
    src = checkout(tmp_path / "src")
    doc = src / "attention/flash_attention_score/docs/aclnnFlashAttentionScoreV2.md"
    from_doc = row(diagnose(inputs(tmp_path, AttentionShape(dtype="fp32"), vendor_dir=v)), "dtype")
    # the query row's cell under 数据类型, not the 使用说明 cell beside it
    cell = line_of(doc, "<td>FLOAT16、BFLOAT16、FLOAT32</td>")
    assert from_doc.status == "pass" and f"{doc}:{cell}" in from_doc.detail
    narrow = checkout(tmp_path / "narrow", dtypes="FLOAT16、BFLOAT16")
    fp32 = row(
        diagnose(inputs(tmp_path, AttentionShape(dtype="fp32"), vendor_dir=v, src=narrow)), "dtype"
    )
    assert fp32.status == "fail" and "fp16, bf16 (from" in fp32.detail
    empty = tmp_path / "empty-src"
    empty.mkdir()
    builtin = row(
        diagnose(inputs(tmp_path, AttentionShape(dtype="int8"), vendor_dir=v, src=empty)), "dtype"
    )
    assert builtin.status == "fail" and BUILTIN_SOURCE in builtin.detail
    assert row(diagnose(inputs(tmp_path, vendor_dir=v)), "dtype").status == "skip"
    # a doc without the table: the built-in list, saying the checkout's doc does not say
    doc.write_text(doc.read_text().replace("<th>数据类型</th>", "<th>类型</th>"))
    silent = row(diagnose(inputs(tmp_path, AttentionShape(dtype="fp32"), vendor_dir=v)), "dtype")
    assert f"({doc} does not say)" in silent.detail and "no checkout here" not in silent.detail


@pytest.mark.parametrize(
    "limit, d, status", [(512, 640, "fail"), (768, 640, "pass"), (768, 1000, "fail")]
)
def test_the_head_dim_limit_comes_from_the_checkouts_docs_with_its_line(tmp_path, limit, d, status):
    src = checkout(tmp_path / f"src{limit}", d=limit)
    check = row(diagnose(inputs(tmp_path, AttentionShape(D=d), src=src)), "shape.head_dim")
    assert check.status == status
    doc = src / "attention/flash_attention_score/docs/aclnnFlashAttentionScoreV2.md"
    line = line_of(doc, f"D：取值范围为1\\~{limit}")  # the section's line, not the example's
    assert f"{doc}:{line} (D：取值范围为1~{limit}。)" in check.detail


def test_an_unaligned_head_dim_is_accepted_but_padded_so_it_warns(tmp_path):
    src = checkout(tmp_path / "src", tiling=True)
    check = row(diagnose(inputs(tmp_path, AttentionShape(D=72), src=src)), "shape.head_dim")
    assert check.status == "warn" and "pads D to 80" in check.detail
    assert "attention/flash_attention_score/op_host/arch32/tiling.cpp:3" in check.detail
    assert (
        row(diagnose(inputs(tmp_path, AttentionShape(D=128), src=src)), "shape.head_dim").status
        == "pass"
    )


@pytest.mark.parametrize(
    "rule",
    ["D：取值范围为16的倍数，最大值为512。", "D: must be a multiple of 16.", "D：需要16对齐。"],
)
def test_an_alignment_the_docs_state_as_a_rule_fails_an_unaligned_head_dim(tmp_path, rule):
    src = checkout(tmp_path / "src", tiling=True)
    doc = src / "attention/flash_attention_score/docs/aclnnFlashAttentionScoreV2.md"
    lines = doc.read_text(encoding="utf-8").splitlines()
    after = line_of(doc, "D：取值范围为1")  # after the D range, inside 约束说明
    lines.insert(after, f"    -   {rule}")
    doc.write_text("\n".join(lines) + "\n", encoding="utf-8")
    check = row(diagnose(inputs(tmp_path, AttentionShape(D=72), src=src)), "shape.head_dim")
    assert check.status == "fail" and f"{doc}:{after + 1} ({rule})" in check.detail
    assert "multiple of 16 (e.g. 80)" in (check.hint or "")
    aligned = row(diagnose(inputs(tmp_path, AttentionShape(D=80), src=src)), "shape.head_dim")
    assert aligned.status == "pass"


def test_without_docs_the_limits_are_the_built_in_ones_and_say_so(tmp_path):
    empty = tmp_path / "none"
    empty.mkdir()
    check = row(diagnose(inputs(tmp_path, AttentionShape(D=800), src=empty)), "shape.head_dim")
    assert check.status == "fail" and BUILTIN_SOURCE in check.detail


@pytest.mark.parametrize(
    "flags, status, words",
    [
        ({"heads": "8", "kv_heads": "3"}, "fail", "not a multiple of 3"),
        ({"heads": "8", "kv_heads": "2"}, "pass", "4 query heads per key/value head"),
        ({"heads": "300"}, "fail", "outside 1..256"),
    ],
)
def test_heads_follow_the_gqa_rule_and_the_documented_range(tmp_path, flags, status, words):
    check = row(diagnose(inputs(tmp_path, shape_from_flags(flags))), "shape.heads")
    assert check.status == status and words in check.detail


def test_layouts_and_the_other_ranges(tmp_path):
    checks = diagnose(
        inputs(tmp_path, shape_from_flags({"layout": "tnd", "seq_len": "4096", "batch": "2"}))
    )
    assert row(checks, "shape.layout").status == "fail"
    assert (
        row(checks, "shape.seq_len").status == "pass"
        and row(checks, "shape.batch").status == "pass"
    )
    none = diagnose(inputs(tmp_path))
    assert row(none, "shape").status == "skip" and "--head-dim" in (row(none, "shape").hint or "")


@pytest.mark.parametrize(
    "flags, words",
    [
        ({"dtype": "fp64"}, "--dtype"),
        ({"head_dim": "x"}, "--head-dim"),
        ({"layout": "NSBD"}, "--layout"),
        ({"heads": "0"}, "--heads"),
    ],
)
def test_a_bad_shape_flag_is_a_usage_error_naming_it(flags, words):
    with pytest.raises(UsageError, match=words):
        shape_from_flags(flags)


def test_each_unfused_chain_gets_the_cause_that_applies(tmp_path):
    l1 = FIX / "torch_npu_2.5_level1"  # fp16 chains with head dim 72, no fused op
    fine = row(diagnose(inputs(tmp_path, profile=l1)), "profile.chain1")
    assert (
        fine.status == "fail"
        and "separate ops" in fine.detail
        and "(fp16, S=1024, D=72)" in fine.detail
    )
    assert "npu_fusion_attention" in (fine.hint or "")
    no_fp16 = vendor(tmp_path / "bf16only", dtypes="bfloat16")
    dtype = row(diagnose(inputs(tmp_path, vendor_dir=no_fp16, profile=l1)), "profile.chain1")
    assert "cause: dtype fp16 is not supported" in dtype.detail
    small = checkout(tmp_path / "small", d=64)
    shape = row(diagnose(inputs(tmp_path, src=small, profile=l1)), "profile.chain1")
    assert "cause: head dim 72 is outside 1..64" in shape.detail
    unregistered = row(diagnose(inputs(tmp_path, env={}, profile=l1)), "profile.chain1")
    assert "cause: registration (registration.env" in unregistered.detail


def test_a_level0_profile_has_no_shapes_and_says_how_to_get_them(tmp_path):
    check = row(
        diagnose(inputs(tmp_path, env={}, profile=FIX / "torch_npu_2.13_level0")), "profile.chain1"
    )
    # the fused op ran in that profile, so registration is not the cause there
    assert "cause unknown" in check.detail and "Level1" in (check.hint or "")


def test_a_profile_without_chains_passes(tmp_path):
    check = row(diagnose(inputs(tmp_path, profile=FIX / "msprof")), "profile")
    assert check.status == "pass" and "fused attention ran 2 times" in check.detail


@pytest.fixture(scope="module")
def llama(tmp_path_factory) -> Dict[str, Path]:
    root = tmp_path_factory.mktemp("llama")
    one = replace(Llama(), ranks=1)
    return {
        "eager": generate(root / "eager", one, formats=("csv",))["csv"],
        "math": generate(root / "math", replace(one, attention="sdpa_math"), formats=("db",))["db"],
    }


def test_the_dtype_and_shape_rows_are_read_from_the_profile_where_no_flag_gives_them(
    tmp_path, llama
):
    checks = diagnose(inputs(tmp_path, profile=llama["eager"]))
    read = "read from the profile's unfused chains, 4 with inputs 2,16,1024,128;2,16,128,1024"
    for cid, said in (
        ("dtype", "bf16 is supported"),
        ("shape.head_dim", "head dim 128 is within"),
        ("shape.heads", "16 query heads"),
        ("shape.seq_len", "sequence length 1024"),
        ("shape.batch", "batch 2"),
    ):
        check = row(checks, cid)
        assert check.status == "pass" and said in check.detail and read in check.detail, cid
    # a flag wins, and its row does not claim the profile
    flagged = row(
        diagnose(inputs(tmp_path, AttentionShape(D=72), profile=llama["eager"])),
        "shape.head_dim",
    )
    assert "head dim 72" in flagged.detail and "read from" not in flagged.detail


def test_sdpa_on_the_math_path_on_the_npu_is_one_cause_not_a_host_fallback(tmp_path, llama):
    checks = diagnose(inputs(tmp_path, profile=llama["math"]))
    chain = row(checks, "profile.chain1")
    assert "math path on the NPU (4 call(s) of aten::_scaled_dot_product_attention_math" in (
        chain.detail
    )
    assert "npu_fusion_attention" in (chain.hint or "")
    assert not [c for c in checks if c.id.startswith("profile.host")]


def fused(op_type: str, inputs_: str, outputs: str):
    """Two calls of one fused op with these shapes, 50 us each."""
    return analyse([(op_type, inputs_, outputs)] * 2, dur_us=50.0, dtype="FLOAT16")


def test_recorded_shapes_never_get_the_level1_advice_and_tnd_claims_no_s(tmp_path):
    facts = operator_facts(None, SOC, tmp_path / "none")
    # FusedInferAttentionScore, BSH: softmax_lse (B, N, S, 1) gives N, so D = 4088 / 8 = 511
    (with_lse,) = fa_shape_checks(
        fused(
            "FusedInferAttentionScore",
            "1,1024,4088;1,1024,4088;1,1024,4088",
            "1,1024,4088;1,8,1024,1",
        ),
        facts,
    )
    assert "D=511, S=1024" in with_lse.detail and "Level1" not in (with_lse.hint or "")
    # without softmax_lse the query does not tell D: said so, no advice to record shapes
    (no_lse,) = fa_shape_checks(
        fused("FusedInferAttentionScore", "1,1024,4088;1,1024,4088", "1,1024,4088"),
        facts,
    )
    assert "does not tell D" in no_lse.detail and "Level1" not in (no_lse.hint or "")
    (tnd,) = fa_shape_checks(
        fused("FlashAttentionVarLenScore", "8192,16,128;8192,16,128", "8192,16,8"),
        facts,
    )
    assert tnd.status == "pass" and "D is a multiple of 128" in tnd.detail
    assert "S is not in the shapes (TND)" in tnd.detail and "D and S" not in tnd.detail


@pytest.mark.parametrize(
    "hostile",
    [
        "<td>" * (256 * 1024),  # cells that never close
        "<td " * (256 * 1024),  # tags that never end
        "- D：" + "1" * (1024 * 1024),  # a number that is never an alignment
    ],
    ids=["open-cells", "open-tags", "long-number"],
)
def test_a_doc_of_one_huge_line_is_read_in_linear_time(tmp_path, hostile):
    """The doc is the checkout's: a 1 MB line must not hang diagnose (each of these
    took minutes to hours when a pattern backtracked over the line)."""
    src = checkout(tmp_path / "src")
    doc = src / "attention/flash_attention_score/docs/aclnnFlashAttentionScoreV2.md"
    doc.write_text(doc.read_text().replace("## 约束说明\n", f"## 约束说明\n\n{hostile}\n"))
    start = time.monotonic()
    facts = operator_facts(None, SOC, src)
    assert time.monotonic() - start < 20  # a hang guard: linear is well under a second
    assert facts.limits["D"].high == 768 and facts.dtypes == ("fp16", "bf16", "fp32")
