"""What a sandbox is (its spec) and what creating one produced (its info)."""

from __future__ import annotations

from pathlib import Path
from typing import Dict, Optional

import msgspec
from msgspec import Struct

from ..bounded import SANDBOX_RECORD, read_state
from ..decoded import to_path

INFO_FILE = "sandbox.json"
# Written first, removed last by create.py: its presence means a creation was cut short.
CREATING_MARK = ".creating"
# A sandbox.json of another schema is treated as no sandbox: it is remade, never misread.
SCHEMA = 1
# The second host the real builds download from: from 9.1 cann/cmake's third_party/*.cmake fetch
# json, abseil-cpp and protobuf (and ops-transformer's docs the cmake-master-026 tarball) there
# (docs/upstream-9.1.md §3c, §3d).  The sandbox mirror serves it under a folder of its name.
OBS_UPSTREAM = "https://cann-3rd.obs.cn-north-4.myhuaweicloud.com/"
OBS_FOLDER = "cann-3rd.obs.cn-north-4.myhuaweicloud.com"
# The third: openEuler's libboundscheck (securec.h), on gitee, under a folder of its name too.
GITEE_UPSTREAM = "https://gitee.com/"
GITEE_FOLDER = "gitee.com"


class SandboxSpec(Struct, frozen=True, kw_only=True):
    dir: Path
    variant: str = "A2"  # A2 (8 x 910B3) or A3 (8 x 2-die Ascend910_9392)
    cann: str = "8.5.0"


class SandboxInfo(Struct, frozen=True, kw_only=True):
    dir: Path
    variant: str
    cann: str
    key: str
    sysroot: Path
    toolkit: Path
    set_env: Path
    mirror: Path
    upstream: str
    soc: str
    chip: str
    schema: int = SCHEMA  # sandbox.json's, written last

    @property
    def mirrors(self) -> Dict[str, str]:
        """URL rewrite rules that send upstream fetches to the sandbox's repositories."""
        # `https://gitcode.com/` -> `file://<sandbox>/mirror/`: the stand-in repos and archives sit
        # at the paths the real URLs name; the OBS host's files under `mirror/<its host name>/`.
        return {
            self.upstream: self.mirror.as_uri() + "/",
            OBS_UPSTREAM: (self.mirror / OBS_FOLDER).as_uri() + "/",
            GITEE_UPSTREAM: (self.mirror / GITEE_FOLDER).as_uri() + "/",
        }


def load_info(directory: Path) -> Optional[SandboxInfo]:
    """The finished sandbox at `directory`, or None if there is none (or only half of one)."""
    # A half-made sandbox (the mark still there) is no sandbox: create_sandbox remakes it.
    if (directory / CREATING_MARK).exists():
        return None
    data = read_state(directory / INFO_FILE, SANDBOX_RECORD)
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        return None
    try:
        return msgspec.convert(data, SandboxInfo, dec_hook=to_path)
    except msgspec.ValidationError:
        return None
