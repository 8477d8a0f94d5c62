"""`docker run` for this host's NPUs and driver: the line, and running it on the user's
terminal (`cannbuild container-run`)."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import List, Mapping, Optional, Sequence

from ..errors import NoContainerEngine, StepFailed, UsageError
from ..host.doctor import read_host
from ..host.sysroot import Sysroot
from ..options import Options
from ..proc import run
from .context import image_for_host
from .engine import find_engine

IMAGE_DRIVER = "/usr/local/Ascend/driver"  # where the CANN images look for the driver


def run_line(
    sysroot: Path, image: str, driver_path: str = "/usr/local/Ascend", tty: bool = True
) -> List[str]:
    """The documented `docker run` for the NPUs this host actually has (-it only with a
    terminal: docker refuses -t when stdin is not one, as in CI)."""

    def present(path: str) -> bool:
        return (sysroot / path.lstrip("/")).exists()

    def index(path: Path) -> int:
        tail = path.name[len("davinci") :]
        return int(tail) if tail.isdigit() else -1

    # The documented line (Ascend/cann-container-image README, opbase quick_install.md):
    #   docker run --device /dev/davinci0 --device /dev/davinci_manager --device /dev/devmm_svm
    #     --device /dev/hisi_hdc -v /usr/local/dcmi:/usr/local/dcmi
    #     -v /usr/local/bin/npu-smi:/usr/local/bin/npu-smi
    #     -v /usr/local/Ascend/driver/lib64/:/usr/local/Ascend/driver/lib64/
    #     -v /usr/local/Ascend/driver/version.info:/usr/local/Ascend/driver/version.info
    #     -v /etc/ascend_install.info:/etc/ascend_install.info -it <image> bash
    argv = ["docker", "run", "--rm", "-it" if tty else "-i"]
    # One node per die: davinci0-7 on an A2 server, davinci0-15 on an A3.
    nodes = sorted((p for p in (sysroot / "dev").glob("davinci*") if index(p) >= 0), key=index)
    for node in nodes:
        argv += ["--device", f"/dev/{node.name}"]
    for name in ("davinci_manager", "devmm_svm", "hisi_hdc"):
        if present(f"/dev/{name}"):
            argv += ["--device", f"/dev/{name}"]
    driver = driver_path.rstrip("/") + "/driver"
    # The driver installs npu-smi in both places; the image expects it in /usr/local/bin.
    smi = next((p for p in ("/usr/local/bin/npu-smi", "/usr/local/sbin/npu-smi") if present(p)), "")
    # The driver's libraries and version file, not the whole driver folder: no image
    # carries a driver, and torch_npu's get_cann_version(DRIVER) reads version.info plus
    # the record.  The images look in /usr/local/Ascend/driver (their ENV LD_LIBRARY_PATH);
    # a driver installed elsewhere goes there too, and where the record names it.
    places = dict.fromkeys([IMAGE_DRIVER, driver])
    mounts = [
        ("/usr/local/dcmi", "/usr/local/dcmi"),
        (smi, "/usr/local/bin/npu-smi"),
        *((f"{driver}/lib64/", f"{place}/lib64/") for place in places),
        *((f"{driver}/version.info", f"{place}/version.info") for place in places),
        ("/etc/ascend_install.info", "/etc/ascend_install.info"),
    ]
    for src, dst in mounts:
        if src and present(src):
            argv += ["-v", f"{src}:{dst}"]
    return [*argv, image, "bash"]


def host_run_line(
    options: Options, env: Mapping[str, str], image: Optional[str], tty: bool
) -> List[str]:
    """`docker run` for this host's NPUs and driver, with `image` or the CANN image of the
    host's CANN version and variant."""
    host = read_host(options, env)
    chosen = image or image_for_host(host.facts)
    if chosen is None:
        raise UsageError(
            "no image for this host: its CANN version or NPU variant is unknown.", "Pass --image."
        )
    root = Sysroot.at(options.sysroot)
    driver = host.facts["driver"]["path"]
    shown = root.display(Path(driver)) if driver else "/usr/local/Ascend"
    return run_line(root.root, chosen, shown, tty=tty)


def run_interactive(argv: Sequence[str]) -> None:
    """Run the `docker run` line with the engine that answers here, on the user's
    terminal (the engine replaces `docker`: podman takes the same arguments)."""
    engine = find_engine()
    if engine is None:
        raise NoContainerEngine(
            "no container engine answers here; the command is:\n  "
            + " ".join(shlex.quote(a) for a in argv),
            "Run it where Docker or Podman works.",
        )
    code = run([engine, *argv[1:]], capture=False, interactive=True).returncode
    if code:
        raise StepFailed(f"{engine} run exited {code}.")
