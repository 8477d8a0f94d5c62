"""`cannbuild.lock`: everything a build was made from, pinned, in TOML.

The lock holds upstream URLs (never mirror URLs, which are site settings) with
credentials redacted, each repo's ref and commit id, the sha256 of every third-party
archive the checkouts' CMake downloads (and which repos take it), the recipe, toolkit
version, the operator release the refs were rendered from (`ops_release`, since
--ops-release; older locks lack it and are read as before) and SoC.  `--locked` turns
any difference between the lock and what this run would use into an error that names it.

Version 1 locks (cannbuild before third-party discovery) pinned only the archives a
recipe listed; they are still read, and count as drift: `cannbuild lock` rewrites them.
Version 3 adds what a 9.1 checkout needs: a pinned source of its own (`source`, the
repository whose cache holds it: ops-tensor, the shared cann/cmake), and the place an
archive the cann/cmake modules declare went into a checkout (`places`).  A lock without
either is written as version 2, byte for byte what cannbuild wrote before, so an older
cannbuild still reads the locks of the recipes it knows.  A version 3 lock may also
leave out the archives of repos none of whose steps ran (`archives_skipped`: an optional
step not selected), and a sandbox lock's header says where each commit was fetched from
(lockheader.py).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple

from msgspec import Struct, field
from msgspec.structs import asdict, replace

from ..bounded import LOCK, parse_toml, read_text
from ..decoded import convert
from ..errors import LockDrift, UsageError
from ..host.versions import parse_cann_version
from ..lazy import lazy_module
from ..redact import redact
from ..workspace import write_atomic
from .lockheader import all_stand_ins, header, origins_in

if TYPE_CHECKING:
    import tomli_w
else:  # only writers pay for it
    tomli_w = lazy_module("tomli_w")

# 2 since third-party discovery; 1 is still read so that drift can say why it is stale; 3 when
# the lock holds a pinned source of its own, an archive's place, an ops release or skipped
# archives (written only then).
READABLE_VERSIONS = (1, 2, 3)


class LockedRepo(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    name: str
    url: str
    ref: str  # "tag v9.0.0"; a pin: "pinned by cmake/third_party/opbase.cmake:10"
    commit: str
    # a pinned source of its own (not a [repos.*] of the recipe): its name, which is its git
    # cache and its member of a bundle ("cann-cmake", "ops-tensor"); "" otherwise
    source: str = ""


class LockedArchive(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    name: str
    url: str
    sha256: str
    repos: Tuple[str, ...] = ()  # the checkouts it is put into
    # checkout -> where it went, for an archive placed where the cann/cmake module that
    # declares it takes a copy (no recipe rule says so); empty when the recipe places it
    places: Dict[str, str] = field(default_factory=dict)
    # on the sandbox: why these bytes are the sandbox's stand-in, not the file upstream
    # declares, accepted by name (--accept-stand-in); "" for the real file
    stand_in: str = ""


class Lock(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A lock file as written (read_lock: msgspec checks each key's kind, check_values
    what each value may hold)."""

    recipe: str
    toolkit_version: str
    soc: str
    recipe_digest: str = ""  # "" in a lock made before cannbuild recorded them
    arch: str = ""
    repos: Tuple[LockedRepo, ...] = ()
    third_party: Tuple[LockedArchive, ...] = ()
    source_date_epoch: int = 0
    container: Dict[str, str] = field(default_factory=dict)
    # as read; one made in memory is written as `written_version()`
    version: int = 2
    sandbox: bool = False  # made on the emulated host: stand-in commits, never a real build
    # the operator release the refs were rendered from (--ops-release, else the toolkit's own);
    # "" in a lock made before cannbuild recorded it
    ops_release: str = ""
    # the repos whose third-party archives it leaves out: none of their steps ran when it was
    # made (optional, not selected); a run that builds one needs them locked (drift)
    archives_skipped: Tuple[str, ...] = ()
    # lock name -> where its commit was fetched from, for a sandbox lock (lockheader.py): in
    # the header only, which is read back
    origins: Dict[str, str] = field(default_factory=dict)
    # the buildable repos it was made for, in the --repos order, when that is not the
    # recipe's default_repos ("": the default); `setup --locked` in a container passes them
    build_repos: Tuple[str, ...] = ()

    @property
    def other_ops_release(self) -> bool:
        """Whether the operator sources are of another release than the toolkit's (a lock
        made with --ops-release): a `setup --locked` from it must pass the same."""
        if not self.ops_release:
            return False
        try:
            own = parse_cann_version(self.toolkit_version).release
        except ValueError:
            return True
        return self.ops_release.lower() != own.lower()

    def repo(self, name: str) -> Optional[LockedRepo]:
        return next((r for r in self.repos if r.name == name), None)

    def archive(self, url: str) -> Optional[LockedArchive]:
        # URLs are stored redacted, so a lookup redacts the recipe's URL the same way.
        return next((a for a in self.third_party if a.url == redact(url)), None)

    def written_version(self) -> int:
        """The version this lock is written as: 3 only when it holds what 3 added (an
        ops release, a pinned source's cache, an archive's places)."""
        if self.version < 2:
            return self.version
        extended = (
            bool(self.ops_release)
            or bool(self.archives_skipped)
            or bool(self.build_repos)
            or any(r.source for r in self.repos)
            or any(a.places for a in self.third_party)
            or any(a.stand_in for a in self.third_party)
        )
        return 3 if extended else 2

    def to_toml(self) -> str:
        data: Dict[str, Any] = {
            "version": self.written_version(),
            "recipe": self.recipe,
            "recipe_digest": self.recipe_digest,
            "toolkit_version": self.toolkit_version,
            **({"ops_release": self.ops_release} if self.ops_release else {}),
            "soc": self.soc,
            "arch": self.arch,
            "source_date_epoch": self.source_date_epoch,
            **({"sandbox": True} if self.sandbox else {}),
            **({"archives_skipped": list(self.archives_skipped)} if self.archives_skipped else {}),
            **({"build_repos": list(self.build_repos)} if self.build_repos else {}),
            # Optional keys are left out when empty (`repos` of an archive, a repo's `source`, an
            # archive's `places`): a lock without them reads as cannbuild wrote it before.
            "repos": [_written(asdict(r)) for r in self.repos],
            "third_party": [
                _written({**asdict(a), "repos": list(a.repos), "places": dict(a.places)})
                for a in self.third_party
            ],
        }
        if self.container:
            data["container"] = dict(sorted(self.container.items()))
        return header(self.sandbox, self.origins) + tomli_w.dumps(data)


def _written(entry: Dict[str, Any]) -> Dict[str, Any]:
    return {k: v for k, v in entry.items() if v or k not in _OPTIONAL}


_OPTIONAL = ("repos", "source", "places", "stand_in")


def read_lock(path: Path) -> Optional[Lock]:
    if not path.exists():
        return None
    text = read_text(path, LOCK)
    data = parse_toml(text, path, LOCK, "cannot be read")
    version = data.get("version")
    # TOML's `version = true` parses to True, which Python counts as the int 1.
    if isinstance(version, bool) or version not in READABLE_VERSIONS:
        raise UsageError(
            f"lock file {path} has version {data.get('version')!r}; this cannbuild reads versions "
            f"{', '.join(map(str, READABLE_VERSIONS))}.",
            "Run `cannbuild lock` to rewrite it.",
        )
    lock = replace(convert(data, Lock, f"lock file {path}", LOCK.hint), origins=origins_in(text))
    check_values(path, lock)
    return lock


# A SHA-1 commit id as `git rev-parse` prints it; upper case or abbreviations never occur in a lock
# cannbuild wrote.
_COMMIT = re.compile(r"[0-9a-f]{40}")
_SHA256 = re.compile(r"[0-9a-f]{64}")
# Recipe names (`cann-9.0`), toolkit versions (`8.2.RC1`, `9.0.0-beta.1`) and SoCs
# (`ascend910_93`): nothing that could open a quote or a new line in a Dockerfile.
_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:/+@=-]*")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
# `third_party/json-3.11.3.tar.gz`, `third_party/makeself/`: relative, no empty or `..` part
_PLACE = re.compile(r"(?!.*(?:^|/)\.\.(?:/|$))[A-Za-z0-9_.+-]+(?:/[A-Za-z0-9_.+-]+)*/?")


def check_values(path: Path, lock: Lock) -> None:
    """Every value a lock carries reaches git, a file name or a Dockerfile: each is checked
    for its kind (a newline in a URL would become a RUN line)."""

    def bad(key: str, value: Any, want: str) -> UsageError:
        return UsageError(
            f"lock file {path}: {key} = {value!r} is not {want}.",
            "Restore the lock from version control, or delete it and run `cannbuild lock`.",
        )

    def text(key: str, value: Any, pattern: Optional[re.Pattern] = None, want: str = "") -> None:
        if not isinstance(value, str) or any(ord(c) < 32 or ord(c) == 127 for c in value):
            raise bad(key, value, "a single-line string")
        if pattern is not None and not pattern.fullmatch(value):
            raise bad(key, value, want)

    for name in ("recipe", "toolkit_version", "soc"):
        text(name, getattr(lock, name), _WORD, "a plain word")
    if lock.ops_release:
        text("ops_release", lock.ops_release, _WORD, "a plain word")
    for name in lock.build_repos:  # they reach the Dockerfile's setup line
        text("build_repos", name, _NAME, "a plain name")
    text("recipe_digest", lock.recipe_digest)
    text("arch", lock.arch)
    for repo in lock.repos:
        text(f"repos {repo.name!r} name", repo.name)
        text(f"repos {repo.name!r} url", repo.url)
        # A blank would split the URL into two words on a git or Dockerfile command line.
        if any(c.isspace() for c in repo.url):
            raise bad(f"repos {repo.name!r} url", repo.url, "a URL without spaces")
        text(f"repos {repo.name!r} ref", repo.ref)
        text(f"repos {repo.name!r} commit", repo.commit, _COMMIT, "a 40-hex commit id")
        if repo.source:  # it names a git cache folder and a bundle member
            text(f"repos {repo.name!r} source", repo.source, _NAME, "a plain name")
    for archive in lock.third_party:
        text(f"third_party {archive.name!r} url", archive.url)
        if any(c.isspace() for c in archive.url):
            raise bad(f"third_party {archive.name!r} url", archive.url, "a URL without spaces")
        text(f"third_party {archive.name!r} sha256", archive.sha256, _SHA256, "a sha256 digest")
        for checkout in archive.repos:
            text(f"third_party {archive.name!r} repos", checkout)
        for checkout, place in archive.places.items():
            # joined to a checkout: relative, no `..`, as a recipe's place
            text(f"third_party {archive.name!r} places", checkout)
            text(
                f"third_party {archive.name!r} places.{checkout}",
                place,
                _PLACE,
                "a path inside the checkout",
            )
    for key, value in lock.container.items():
        text(f"container.{key}", value)
    for name in lock.archives_skipped:
        text("archives_skipped", name, _NAME, "a repo name")


def write_lock(path: Path, lock: Lock) -> None:
    write_atomic(path, lock.to_toml().encode("utf-8"))


class Wanted(Struct, frozen=True, kw_only=True):
    """What this run would lock, before commits and hashes are known."""

    recipe: str
    toolkit_version: str
    soc: str
    repos: Tuple[Tuple[str, str, str], ...]  # (name, url, ref description)
    archives: Tuple[Tuple[str, str, Optional[str]], ...]  # (name, url, pinned sha256)
    sandbox: bool = False  # this run is on the emulated host
    # (lock name `<repo>:<dest>`, url) of every pinned source; their commits come from the
    # checkouts' own cmake files, so only that they are locked, and from where, is compared
    pins: Tuple[Tuple[str, str], ...] = ()
    ops_release: str = ""  # the operator release the refs render from
    # the repos none of whose steps runs: their archives need not be locked
    archives_skipped: Tuple[str, ...] = ()
    # buildable repos the recipe has but this run does not build (--repos): a lock that
    # holds them was made for another selection
    unselected: Tuple[str, ...] = ()
    # the --repos order when it is not the recipe's default (Lock.build_repos)
    build_repos: Tuple[str, ...] = ()


def drift(lock: Lock, wanted: Wanted) -> List[str]:
    """Every way the lock differs from what would be built now, in words."""
    found: List[str] = []
    if lock.version < 2:
        found.append(
            f"the lock has version {lock.version} (an older cannbuild): it pins only the archives "
            "the recipe listed, not every one the sources' cmake/third_party/*.cmake downloads"
        )
    if lock.sandbox and not wanted.sandbox:
        found.append(
            "the lock was made on cannbuild's emulated host (--sandbox): "
            + (
                "its commits are the stand-in repositories', not upstream's"
                if all_stand_ins(lock.origins)
                else "its toolkit was an emulated one"
            )
        )
    elif wanted.sandbox and not lock.sandbox:
        found.append("the lock pins real upstream commits; this run is on the emulated host")
    if lock.recipe != wanted.recipe:
        found.append(f"recipe: the lock was made with {lock.recipe}, this run uses {wanted.recipe}")
    if lock.toolkit_version != wanted.toolkit_version:
        found.append(
            f"toolkit: the lock was made for CANN {lock.toolkit_version}, this host has {wanted.toolkit_version}"
        )
    if lock.ops_release and wanted.ops_release and lock.ops_release != wanted.ops_release:
        found.append(
            f"ops release: the lock was made for ops {lock.ops_release}, this run builds "
            f"{wanted.ops_release} (--ops-release; default: the toolkit's own)"
        )
    if lock.soc != wanted.soc:
        found.append(f"soc: the lock says {lock.soc}, this run builds for {wanted.soc}")
    for name, url, ref in wanted.repos:
        locked = lock.repo(name)
        if locked is None:
            found.append(f"repo {name}: not in the lock")
            continue
        if locked.url != redact(url):
            found.append(f"repo {name}: the lock has {locked.url}, the recipe {redact(url)}")
        if locked.ref != ref:
            found.append(f"repo {name}: the lock pins {locked.ref}, the recipe asks for {ref}")
    wanted_names = {name for name, _, _ in wanted.repos}
    for name, url in wanted.pins:
        locked = lock.repo(name)
        if locked is None:
            found.append(f"pinned source {name}: not in the lock")
        elif locked.url != redact(url):
            found.append(
                f"pinned source {name}: the lock has {locked.url}, the recipe {redact(url)}"
            )
    pinned = {name for name, _ in wanted.pins}
    # `<repo>:<dest>` names are nested checkouts (pin_name): the recipe lists them as pins.
    for locked in lock.repos:
        owner = locked.name.split(":", 1)[0]
        if owner in wanted.unselected:
            if ":" not in locked.name:
                found.append(
                    f"repo {locked.name}: in the lock, and this run does not build it (--repos "
                    "selects the repos; the lock records the ones it was made for)"
                )
        elif ":" not in locked.name and locked.name not in wanted_names:
            found.append(f"repo {locked.name}: in the lock but not in the recipe")
        elif ":" in locked.name and locked.name not in pinned:
            found.append(f"pinned source {locked.name}: in the lock but not in the recipe")
    if lock.build_repos != wanted.build_repos and set(lock.build_repos) == set(wanted.build_repos):
        found.append(
            f"repos: the lock was made for --repos {','.join(lock.build_repos)}, this run "
            f"builds them in the order {','.join(wanted.build_repos)} (the order the source "
            "line sets)"
        )
    for name in lock.archives_skipped:
        if name not in wanted.archives_skipped:
            found.append(
                f"third-party archives of {name}: the lock leaves them out (no step of {name} "
                "ran when it was made), and this run builds it (`cannbuild lock` with the same "
                "--with-step pins them)"
            )
    # Only archives the recipe itself names by URL are compared here; the ones the checkouts' cmake
    # files declare follow from the locked commits.
    for name, url, sha in wanted.archives:
        archive = lock.archive(url)
        if archive is None:
            found.append(f"third-party {name}: {redact(url)} is not in the lock")
        elif sha and archive.sha256 != sha:
            found.append(
                f"third-party {name}: the lock has sha256 {archive.sha256}, the recipe pins {sha}"
            )
    return found


def refuse_drift(path: Path, problems: List[str]) -> LockDrift:
    listed = "; ".join(problems)
    return LockDrift(
        f"--locked: {path} does not match this build: {listed}.",
        "Run `cannbuild lock` to re-pin on purpose (and commit the new lock), or build without --locked.",
    )
