"""Real small host trees for host-reading tests: files, symlinks, sysfs, npu-smi.

Kept independent of `cannbuild.sandbox` on purpose, so a bug shared by the
sandbox builder and the detector cannot hide itself.  Links follow what real
hosts have: the <=8.3 `latest` farm uses relative links, the >=8.5 compat
`ascend-toolkit/latest` an absolute one.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Mapping, Optional

from cannbuild.host.toolkit import host_arch

FIXTURES = Path(__file__).parent / "fixtures" / "host"

SET_ENV = """\
_here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export ASCEND_TOOLKIT_HOME="${_here}/%(sub)s"
export ASCEND_HOME_PATH="${ASCEND_TOOLKIT_HOME}"
export ASCEND_OPP_PATH="${ASCEND_TOOLKIT_HOME}/opp"
export PATH="${ASCEND_TOOLKIT_HOME}/bin:${ASCEND_TOOLKIT_HOME}/compiler/ccec_compiler/bin:${PATH}"
export LD_LIBRARY_PATH="${ASCEND_TOOLKIT_HOME}/lib64:${LD_LIBRARY_PATH}"
"""


def write(path: Path, text: str, mode: Optional[int] = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    if mode is not None:
        path.chmod(mode)
    return path


def files(root: Path, texts: Mapping[str, str]) -> Path:
    """A small source tree: each relative path with its text."""
    for rel, text in texts.items():
        write(root / rel, text)
    return root


def executable(path: Path, text: str) -> Path:
    return write(
        path, text, stat.S_IRWXU | stat.S_IRGRP | stat.S_IXGRP | stat.S_IROTH | stat.S_IXOTH
    )


def info_text(version: str, arch: str, path: str) -> str:
    return (
        "package_name=Ascend-cann-toolkit\n"
        f"version={version}\n"
        "innerversion=V100R001C25SPC001B212\n"
        "compatible_version=[V100R001C21],[V100R001C23],[V100R001C25]\n"
        f"arch={arch}\nos=linux\npath={path}\n"
    )


class HostTree:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.arch = host_arch()
        self.ascend = root / "usr/local/Ascend"

    def _component_dirs(self, tk: Path, version: str, bisheng: bool = True) -> None:
        for comp in ("runtime", "compiler", "opp", "toolkit"):
            write(tk / comp / "version.info", f"Version={version}.2.220\nversion_dir={version}\n")
        if bisheng:
            executable(tk / "compiler/ccec_compiler/bin/bisheng", '#!/bin/sh\nexec c++ "$@"\n')

    def toolkit_cann(self, version: str = "8.5.0", *, info: Optional[str] = None) -> Path:
        """>= 8.5: cann-<ver> + `cann -> cann-<ver>` + absolute ascend-toolkit/latest."""
        tk = self.ascend / f"cann-{version}"
        write(
            tk / f"{self.arch}-linux" / "ascend_toolkit_install.info",
            info
            if info is not None
            else info_text(version, self.arch, f"/usr/local/Ascend/cann-{version}"),
        )
        self._component_dirs(tk, version)
        write(tk / "set_env.sh", SET_ENV % {"sub": ""})
        for pkg in ("runtime", "opbase", "metadef", "bisheng-compiler"):
            write(tk / "share/info" / pkg / "version.info", f"Version={version}\n")
        link = self.ascend / "cann"
        if not link.is_symlink():
            link.symlink_to(f"cann-{version}")
        compat = self.ascend / "ascend-toolkit" / "latest"
        compat.parent.mkdir(parents=True, exist_ok=True)
        if not compat.is_symlink() and not compat.exists():
            compat.symlink_to("/usr/local/Ascend/cann")
        if not (self.ascend / "ascend-toolkit" / "set_env.sh").exists():
            write(
                self.ascend / "ascend-toolkit" / "set_env.sh",
                "source /usr/local/Ascend/cann/set_env.sh\n",
            )
        return tk

    def toolkit_farm(
        self, version: str = "8.3.RC2", *, info: Optional[str] = None, version_cfg: bool = True
    ) -> Path:
        """<= 8.3: ascend-toolkit/<ver> + `latest` farm of relative links + version.cfg."""
        base = self.ascend / "ascend-toolkit"
        tk = base / version
        self._component_dirs(tk, version)
        if info is not False:
            write(
                tk / f"{self.arch}-linux" / "ascend_toolkit_install.info",
                info
                if info is not None
                else info_text(
                    version,
                    self.arch,
                    f"/usr/local/Ascend/ascend-toolkit/{version}/{self.arch}-linux",
                ),
            )
        latest = base / "latest"
        latest.mkdir(parents=True, exist_ok=True)
        for comp in ("runtime", "compiler", "opp", "toolkit"):
            (latest / comp).symlink_to(f"../{version}/{comp}")
        (latest / f"{self.arch}-linux").symlink_to(f"../{version}/{self.arch}-linux")
        if version_cfg:
            write(
                latest / "version.cfg",
                f"# version: 1.0\ntoolkit_running_version=[7.8.0.1.100:{version}]\n",
            )
        write(base / "set_env.sh", SET_ENV % {"sub": "latest"})
        return latest

    def kernels(self, tk: Path, soc: str, ops: tuple = ("flash_attention_score",)) -> None:
        base = tk / "opp/built-in/op_impl/ai_core/tbe/kernel" / soc
        write(base / "ops_oam" / "ops_oam.json", "{}\n")
        for op in ops:
            write(base / "ops_transformer" / op / f"{op}.json", "{}\n")

    def pci(self, device: str, count: int, start: int = 0) -> None:
        for i in range(start, start + count):
            dev = self.root / "sys/bus/pci/devices" / f"0000:{0xC1 + i:02x}:00.0"
            write(dev / "vendor", "0x19e5\n")
            write(dev / "device", f"0x{device}\n")
        nic = self.root / "sys/bus/pci/devices/0000:05:00.0"
        write(nic / "vendor", "0x19e5\n")  # a Huawei NIC: same vendor, not an NPU
        write(nic / "device", "0x1822\n")

    def npu_smi(
        self,
        info_fixture: Optional[str],
        board_fixture: Optional[str] = None,
        body: Optional[str] = None,
    ) -> Path:
        script = body
        if script is None:
            info = FIXTURES / info_fixture if info_fixture else None
            board = FIXTURES / board_fixture if board_fixture else None
            script = (
                "#!/bin/sh\n"
                'if [ "$1 $2" = "info -t" ]; then\n'
                + (f'  cat "{board}"; exit 0\n' if board else "  exit 1\n")
                + "fi\n"
                + (f'cat "{info}"\n' if info else "exit 1\n")
            )
        return executable(self.root / "usr/local/bin/npu-smi", script)

    def driver(self, version_fixture: str = "driver-version.info.25.3.rc1") -> None:
        write(self.root / "etc/ascend_install.info", (FIXTURES / "ascend_install.info").read_text())
        write(self.ascend / "driver/version.info", (FIXTURES / version_fixture).read_text())

    def installer_record(self, install_path: str = "/usr/local/Ascend") -> None:
        write(self.root / "etc/Ascend/ascend_cann_install.info", f"Install_Path={install_path}\n")


def clean_env(**extra: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ASCEND_", "CANNBUILD_"))}
    env["HOME"] = "/root-home-not-here"
    env.update(extra)
    return env


def a2_host(tree: HostTree, version: str = "8.5.0") -> Path:
    """An Atlas A2 host (8 x 910B3, their npu-smi, a driver) with CANN `version`."""
    tk = tree.toolkit_cann(version)
    tree.kernels(tk, "ascend910b")
    tree.pci("d802", 8)
    tree.npu_smi("a2-910b3-npu-smi-info-cann8.3.txt")
    tree.driver()
    return tk
