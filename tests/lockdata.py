"""A small lock shared by the unit tests that read or render locks."""

import hashlib
from pathlib import Path

from cannbuild.sources.lock import Lock, LockedArchive, LockedRepo

RECIPES = Path(__file__).resolve().parents[1] / "recipes"

OPBASE_URL = "https://gitcode.com/cann/opbase.git"
TRANSFORMER_URL = "https://gitcode.com/cann/ops-transformer.git"


def sample_lock(cann: str, *, pinned_opbase: bool = False, epoch: int = 1700000000) -> Lock:
    """A lock for tag v<cann> on A3; `pinned_opbase` adds ops-transformer's own opbase pin."""
    repos = [
        LockedRepo(name="opbase", url=OPBASE_URL, ref=f"tag v{cann}", commit="a" * 40),
        LockedRepo(
            name="ops-transformer", url=TRANSFORMER_URL, ref=f"tag v{cann}", commit="b" * 40
        ),
    ]
    if pinned_opbase:
        repos.append(
            LockedRepo(
                name="ops-transformer:third_party/opbase",
                url=OPBASE_URL,
                ref="pinned",
                commit="c" * 40,
            )
        )
    train = ".".join(cann.split(".")[:2])
    return Lock(
        recipe=f"cann-{train}",
        # the shipped recipe's, as `cannbuild lock` records it
        recipe_digest=hashlib.sha256((RECIPES / f"{train}.toml").read_bytes()).hexdigest(),
        toolkit_version=cann,
        soc="ascend910_93",
        arch="x86_64",
        repos=tuple(repos),
        third_party=(
            LockedArchive(name="makeself", url="https://x/makeself.tar.gz", sha256="d" * 64),
        ),
        source_date_epoch=epoch,
    )
