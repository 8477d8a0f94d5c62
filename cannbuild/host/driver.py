"""The Ascend driver and firmware as their installers recorded them."""

from __future__ import annotations

from pathlib import Path
from typing import Optional, Tuple

from msgspec import Struct

from .infofiles import InfoFileError, bracket_list, get_ci, read_kv
from .sysroot import Sysroot
from .versions import DriverVersion, parse_driver_version

# Written by the driver installer (tests/fixtures/host/ascend_install.info):
#   Driver_Install_Path_Param=/usr/local/Ascend
#   Firmware_Install_Path_Param=/usr/local/Ascend
# Containers often lack it (reference cann-environment.md §5), hence the default below.
INSTALL_INFO = "/etc/ascend_install.info"
DEFAULT_INSTALL_PATH = "/usr/local/Ascend"


class Driver(Struct, frozen=True, kw_only=True):
    install_path: Path
    version_file: Optional[Path]
    version: Optional[DriverVersion]
    version_text: Optional[str]
    innerversion: Optional[str]
    compatible_trains: Tuple[str, ...]
    firmware_range: Optional[Tuple[str, str]]
    firmware_version: Optional[str]
    problems: Tuple[str, ...] = ()

    @property
    def present(self) -> bool:
        return self.version_file is not None


def read_driver(sysroot: Sysroot) -> Driver:
    problems = []
    info_path = sysroot.path(INSTALL_INFO)
    install_param = DEFAULT_INSTALL_PATH
    firmware_param = DEFAULT_INSTALL_PATH
    if info_path.exists():
        try:
            values = read_kv(info_path)
            # The driver then lives in `<param>/driver/`, its firmware in `<param>/firmware/`.
            install_param = get_ci(values, "Driver_Install_Path_Param") or install_param
            firmware_param = get_ci(values, "Firmware_Install_Path_Param") or firmware_param
        except InfoFileError as exc:
            problems.append(f"{INSTALL_INFO} {exc.problem}")
    install_path = sysroot.from_user(install_param)
    version_file = install_path / "driver" / "version.info"
    version: Optional[DriverVersion] = None
    version_text = innerversion = None
    trains: Tuple[str, ...] = ()
    fw_range: Optional[Tuple[str, str]] = None
    if version_file.exists():
        try:
            values = read_kv(version_file)
            # `package_version=25.3.rc1` names the HDK release; older files lack it and carry only
            # `Version=` (the 24.1.rc1 sample in reference cann-environment.md §1.7).
            version_text = get_ci(values, "package_version") or get_ci(values, "Version")
            innerversion = get_ci(values, "Innerversion")
            # `compatible_version=[V100R001C19],...,[V100R001C23]`: the CANN trains this driver
            # takes.
            trains = bracket_list(get_ci(values, "compatible_version"))
            fw = get_ci(values, "compatible_version_fw")
            # `compatible_version_fw=[7.0.0,8.9.9]`: the firmware `Version=` range the driver
            # accepts.
            if fw and fw.startswith("[") and "," in fw:
                lo, _, hi = fw.strip("[]").partition(",")
                fw_range = (lo.strip(), hi.strip())
            if version_text:
                version = parse_driver_version(version_text)
            else:
                problems.append(f"{sysroot.display(version_file)} has no Version= line")
        except InfoFileError as exc:
            problems.append(f"{sysroot.display(version_file)} {exc.problem}")
        except ValueError as exc:
            problems.append(f"{sysroot.display(version_file)}: {exc}")
    firmware_file = sysroot.from_user(firmware_param) / "firmware" / "version.info"
    firmware_version = None
    if firmware_file.exists():
        try:
            # The firmware's `Version=7.1.0.11.220` is what the driver's range bounds; its
            # `package_version=23.0.7` is the HDK release
            # (tests/fixtures/host/firmware-version.info.23.0.7).
            firmware_version = get_ci(read_kv(firmware_file), "Version")
        except InfoFileError as exc:
            problems.append(f"{sysroot.display(firmware_file)} {exc.problem}")
    return Driver(
        install_path=install_path,
        version_file=version_file if version_file.exists() else None,
        version=version,
        version_text=version_text,
        innerversion=innerversion,
        compatible_trains=trains,
        firmware_range=fw_range,
        firmware_version=firmware_version,
        problems=tuple(problems),
    )


def firmware_in_range(version: str, bounds: Tuple[str, str]) -> Optional[bool]:
    """Firmware `7.8.0.6.201` within `[7.0.0,8.9.9]`; None when not numeric."""

    def nums(text: str) -> Tuple[int, ...]:
        return tuple(int(p) for p in text.split("."))

    try:
        v, lo, hi = nums(version), nums(bounds[0]), nums(bounds[1])
    except ValueError:
        return None
    width = max(len(v), len(lo), len(hi))
    pad = lambda t: t + (0,) * (width - len(t))  # noqa: E731
    # an upper bound of 8.9.9 admits 8.9.9.x builds
    return pad(lo) <= pad(v) and v[: len(hi)] <= hi
