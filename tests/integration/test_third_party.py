"""Third-party archives on the sandbox, end to end: read from each checkout's own
cmake/third_party/*.cmake, locked, bundled, put where the ref looks, and an offline
build that reaches no network at all."""

import json
import os
import re
import sys
import tarfile

import pytest
import tomli_w
from conftest import SPECS, Cli, air_gapped
from reference import reference_torch

from cannbuild.recipes import load_recipe
from cannbuild.recipes.selection import select_repos
from cannbuild.resources import data_dir
from cannbuild.sandbox import SandboxSpec, create_sandbox
from cannbuild.sandbox.third_party import standin_archives

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

reference_torch()

DEAD_NETWORK = "file:///nonexistent-network/"
SERVED = {a.url: a for a in standin_archives().values()}


def lock_of(cli: Cli) -> dict:
    return tomllib.loads(cli.lock.read_text())


@pytest.mark.parametrize(
    "key, names",
    [
        ("A2-8.5.0", {"makeself", "protobuf", "abseil-cpp", "eigen", "json"}),
        ("A3-9.0.0", {"makeself", "protobuf", "abseil-cpp", "eigen", "json"}),
    ],
)
def test_setup_offline_from_a_bundle_builds_with_every_url_unreachable(
    cli_for, tmp_path, key, names
):
    cli = cli_for(key, cwd=tmp_path / "online")
    # a sandbox of its own: its mirror goes away below, which the shared one's users
    # (other xdist workers) must not see
    variant, cann = SPECS[key]
    cli.sandbox = create_sandbox(
        SandboxSpec(dir=tmp_path / "sandbox", variant=variant, cann=cann)
    ).info.dir
    assert cli("fetch").returncode == 0
    pinned = {a["url"]: a for a in lock_of(cli)["third_party"]}
    assert {a["name"] for a in pinned.values()} == names
    for url, archive in pinned.items():  # the sha256 of what the mirror serves
        assert archive["sha256"] == SERVED[url].sha256, url
    bundle = tmp_path / "sources.tar"
    assert cli("bundle", str(bundle), sandbox=False).returncode == 0
    with tarfile.open(bundle) as tar:
        members = tar.getnames()
    assert all(any(a["sha256"] in m for m in members) for a in pinned.values())

    air = air_gapped(tmp_path, cli)
    mirror = cli.sandbox / "mirror"
    away = cli.sandbox / "mirror.unreachable"
    os.rename(mirror, away)  # git, cannbuild's downloads and the build's own: all gone
    try:
        proc = air("setup", "--offline", "--bundle", str(bundle))
    finally:
        os.rename(away, mirror)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert air.report()["validation"]["status"] == "PASS"
    logs = "".join(p.read_text() for p in (air.ws / "logs" / "latest").glob("*-build.log"))
    # nothing was fetched: a copy in a download folder was used only after its hash matched
    assert "Using src=" not in logs and "Downloading" not in logs
    # each archive was put where that ref looks first (the recipe's first place); the build
    # may since have unpacked it in place, as the real one does
    recipe = load_recipe(data_dir("recipes") / f"{'.'.join(cli.cann.split('.')[:2])}.toml")
    locked = {a["name"]: a["sha256"] for a in pinned.values()}
    # a repo none of whose steps runs (9.0's optional opbase build) gets no archives at all
    idle = set(lock_of(cli).get("archives_skipped", []))
    assert idle == ({"opbase"} if key == "A3-9.0.0" else set())
    selected = select_repos(recipe, ())  # the default set: opbase and ops-transformer
    unselected = {r.name for r in recipe.repos} - {r.name for r in selected.repos}
    # both trains list the siblings (8.5 at their v8.5.0 tags); the default set builds none
    assert unselected == {"ops-math", "ops-nn", "ops-cv"}
    assert not any((air.ws / "src" / f".{name}.checkout.json").exists() for name in unselected)
    for repo in selected.repos:
        marker = json.loads((air.ws / "src" / f".{repo.name}.checkout.json").read_text())
        wanted = {r.place[0]: locked[r.name] for r in repo.third_party if r.needed}
        assert marker["third_party"] == ({} if repo.name in idle else wanted)


def test_a_download_the_recipe_does_not_know_fails_naming_the_url_and_the_mirror_rule(
    cli_for, tmp_path
):
    cli = cli_for("A3-9.0.0")
    recipe = tomllib.loads((data_dir("recipes") / "9.0.toml").read_text())
    rules = recipe["repos"]["ops-transformer"]["third_party"]
    rules[:] = [r for r in rules if r["name"] != "json"]  # a recipe that does not know json
    (cli.cwd / "cannbuild-recipes").mkdir()
    (cli.cwd / "cannbuild-recipes" / "9.0.toml").write_text(tomli_w.dumps(recipe))
    proc = cli("build", env=cli.env(CANNBUILD_SANDBOX_NETWORK=DEAD_NETWORK))
    assert proc.returncode == 4
    url = "https://gitcode.com/cann-src-third-party/json/releases/download/v3.11.3/include.zip"
    # cannbuild names the archive the recipe says nothing of ...
    assert re.search(
        rf"ops-transformer: cmake/third_party/json.cmake:\d+ downloads {re.escape(url)}, "
        "of which recipe cann-9.0 says nothing",
        proc.stderr,
    )
    # ... and the failed download with the rule that would have reached it
    hint = proc.stderr.split("hint: ", 1)[1]
    assert f"the build downloaded {url} itself" in hint
    assert "cannbuild.mirrors: {'https://gitcode.com/': 'https://your-mirror/'}" in hint


def test_the_stand_in_rejects_a_copy_with_another_hash_as_the_real_build_does(cli_for):
    cli = cli_for("A3-9.0.0")
    assert cli("fetch").returncode == 0
    copy = cli.ws / "src/ops-transformer/third_party/pkg/makeself-release-2.5.0-patch1.tar.gz"
    copy.write_bytes(b"not makeself")
    proc = cli("build")
    assert proc.returncode == 4
    assert "does not match expected value" in proc.stderr
    # the hint says which copy was rejected and why: cannbuild's, changed after it was placed
    assert "the file was changed or replaced after cannbuild placed it" in proc.stderr
    assert f"Delete {cli.ws / 'src' / 'ops-transformer'} and run again" in proc.stderr


def test_8_3_refuses_to_build_offline_naming_what_its_refs_download_every_time(cli_for, tmp_path):
    cli = cli_for("A2-8.3.RC2", cwd=tmp_path / "online")
    assert cli("fetch").returncode == 0
    assert {a["name"] for a in lock_of(cli)["third_party"]} == {"makeself", "json"}
    bundle = tmp_path / "sources.tar"
    assert cli("bundle", str(bundle), sandbox=False).returncode == 0
    air = air_gapped(tmp_path, cli)
    proc = air("setup", "--offline", "--bundle", str(bundle))
    assert proc.returncode == 8
    # opbase comes first in the recipe: its protobuf and eigen are downloaded on every build
    assert re.search(r"offline mode: opbase at \w+ downloads during its build", proc.stderr)
    assert "takes no local copy of: protobuf (" in proc.stderr and "; eigen (" in proc.stderr
    assert "cannot build without the network" in proc.stderr
    assert not list((air.ws / "logs").glob("*/*-build.log"))  # refused before any build


def test_a_lock_from_before_discovery_is_relocked_or_refused_with_locked(cli_for):
    cli = cli_for("A2-8.5.0")
    assert cli("fetch").returncode == 0
    path = cli.lock
    text = path.read_text()
    # what cannbuild wrote before it read the archives from the checkouts: version 1,
    # only the makeself archive of the recipe's [[third_party]] list
    old = tomllib.loads(text)
    old["version"] = 1
    old["third_party"] = [
        {k: v for k, v in a.items() if k != "repos"}
        for a in old["third_party"]
        if a["name"] == "makeself"
    ]
    path.write_text(tomli_w.dumps(old))
    proc = cli("fetch", "--locked")
    assert proc.returncode == 6
    assert "the lock has version 1 (an older cannbuild)" in proc.stderr
    assert "cannbuild lock" in proc.stderr
    proc = cli("fetch")
    assert proc.returncode == 0, proc.stderr
    assert "lock updated: the lock has version 1" in proc.stderr
    assert path.read_text() == text
