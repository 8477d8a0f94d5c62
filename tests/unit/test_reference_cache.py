"""FlashAttention's float64 references kept per machine (validate/refcache.py, cases.reference_once):
reused only where they agree with this run's inputs, made again otherwise."""

import json

import msgspec
import pytest
from reference import reference_torch

from cannbuild import usercache
from cannbuild.bounded import ARCHIVE, digest
from cannbuild.validate import cases, refcache

pytestmark = pytest.mark.xdist_group("torch")  # one xdist worker imports torch for these

CAUSAL = cases.Case(
    name="fp16_bsh_t", dtype="fp16", layout="BSH", B=1, N1=4, N2=2, S=33, D=64, causal=True
)
VARLEN = cases.Case(
    name="fp16_tnd_t", dtype="fp16", layout="TND", B=2, N1=2, N2=1, S=12, D=64, causal=False,
    seq_q=(5, 7), seq_kv=(6, 3),
)  # fmt: skip


@pytest.fixture
def torch(monkeypatch, tmp_path):
    """torch, and a cache of this test's own (never the user's)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    (tmp_path / "xdg").mkdir()
    return reference_torch()


def fresh(case):
    memo = {}
    ref = cases.reference_once(memo, case, cases.inputs_once(memo, case))
    return ref, memo.get(f"fa-reference-kept:{case.name}", False)


def same(torch, a, b):
    return (
        torch.equal(a.out, b.out)
        and torch.equal(a.softmax_max, b.softmax_max)
        and torch.equal(a.softmax_sum, b.softmax_sum)
        and (a.same_dtype_err, a.noise) == (b.same_dtype_err, b.noise)
    )


def entry_file(tmp_path):
    (entry,) = (tmp_path / "xdg" / "cannbuild" / refcache.KIND).iterdir()
    return entry / refcache.FILE


def rewrite(path, save):
    """Replace the kept file and its manifest line: an entry that is whole, but wrong."""
    save(path)
    manifest = path.parent / usercache.MANIFEST
    listed = json.loads(manifest.read_text())
    listed[path.name] = digest(path, ARCHIVE)
    manifest.write_text(json.dumps(listed))


@pytest.mark.parametrize("case", [CAUSAL, VARLEN], ids=["causal", "varlen"])
def test_a_second_run_takes_the_kept_reference_and_it_is_the_one_it_would_compute(torch, case):
    first, kept_first = fresh(case)
    second, kept_second = fresh(case)
    assert (kept_first, kept_second) == (False, True)
    assert same(torch, second, cases.reference(case, cases.make_inputs(case)))
    assert same(torch, first, second)


@pytest.mark.parametrize("case", [CAUSAL, VARLEN], ids=["causal", "varlen"])
def test_a_kept_reference_that_disagrees_with_the_inputs_is_made_again(torch, tmp_path, case):
    right, _ = fresh(case)
    # one value of the last sequence's last row off: what a stale entry under the same key holds
    out = right.out.clone()
    out[0, -1, -1, -1] += 1e-6
    wrong = {**torch.load(entry_file(tmp_path), weights_only=True), "out": out}
    rewrite(entry_file(tmp_path), lambda p: torch.save(wrong, p))
    again, kept = fresh(case)
    assert not kept and same(torch, again, right)
    assert fresh(case)[1]  # and the entry was made right again


def test_an_unreadable_kept_reference_is_made_again(torch, tmp_path):
    right, _ = fresh(CAUSAL)
    rewrite(entry_file(tmp_path), lambda p: p.write_bytes(b"not a torch file"))
    again, kept = fresh(CAUSAL)
    assert not kept and same(torch, again, right)


def test_the_agreement_check_can_say_no(torch):
    tensors = cases.make_inputs(VARLEN)
    right = cases.reference(VARLEN, tensors)
    assert cases.agrees(VARLEN, tensors, right)
    other = cases.make_inputs(msgspec.structs.replace(VARLEN, name="fp16_tnd_u"))
    assert not cases.agrees(VARLEN, other, right)  # another case's inputs
    shorter = cases.Reference(
        out=right.out[:, :, :-1],
        softmax_max=right.softmax_max[:, :, :-1],
        softmax_sum=right.softmax_sum[:, :, :-1],
        same_dtype_err=right.same_dtype_err,
        noise=right.noise,
    )
    assert not cases.agrees(VARLEN, tensors, shorter)


def test_a_cache_that_cannot_keep_it_still_gives_the_reference(torch, tmp_path):
    (tmp_path / "xdg" / "cannbuild").mkdir()
    (tmp_path / "xdg" / "cannbuild" / refcache.KIND).write_text("a file where a folder goes")
    ref, kept = fresh(CAUSAL)
    assert not kept and same(torch, ref, cases.reference(CAUSAL, cases.make_inputs(CAUSAL)))
