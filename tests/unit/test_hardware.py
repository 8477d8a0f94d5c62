from cannbuild.host.hardware import detect_hardware
from cannbuild.host.sysroot import Sysroot

from hosttree import FIXTURES, clean_env


def detect(tree):
    return detect_hardware(Sysroot.at(tree.root), clean_env())


def test_a2_from_pci_with_chip_name_from_npu_smi(tree):
    tree.pci("d802", 8)
    tree.npu_smi("a2-910b3-npu-smi-info-cann8.3.txt")
    hw = detect(tree)
    assert (hw.source, hw.family.soc, hw.family.variant) == ("pci", "ascend910b", "A2")
    assert (hw.chip, hw.npu_count, hw.chip_count) == ("Ascend910B3", 8, 8)
    assert hw.npu_smi_version == "25.3.rc1.b061"
    assert hw.problems == ()


def test_a3_sixteen_dies_eight_npus_and_soc_from_board(tree):
    tree.pci("d803", 16)
    tree.npu_smi("a3-npu-smi-info-idle-cann8.2.txt", "a3-npu-smi-board-chip.txt")
    hw = detect(tree)
    assert (hw.family.soc, hw.family.variant) == ("ascend910_93", "A3")
    assert (hw.npu_count, hw.chip_count, hw.chip) == (8, 16, "Ascend910_9392")


def test_pci_alone_is_enough(tree):
    tree.pci("d803", 16)
    hw = detect(tree)
    assert (hw.source, hw.family.soc, hw.npu_count, hw.chip) == ("pci", "ascend910_93", 8, None)


def test_npu_smi_alone_when_sysfs_hides_devices(tree):
    tree.npu_smi("a3-npu-smi-info-idle-cann8.2.txt", "a3-npu-smi-board-chip.txt")
    hw = detect(tree)
    assert (hw.source, hw.family.soc, hw.chip_count) == ("npu-smi", "ascend910_93", 16)


def test_huawei_nic_is_not_an_npu(tree):
    tree.pci("d802", 0)  # only the 0x1822 NIC
    hw = detect(tree)
    assert hw.family is None and hw.npu_count == 0


def test_mixed_families_are_flagged(tree):
    tree.pci("d802", 8)
    tree.pci("d803", 2, start=8)
    hw = detect(tree)
    assert hw.mixed
    assert hw.pci_counts == {"ascend910b": 8, "ascend910_93": 2}


def test_garbage_npu_smi_is_a_problem_not_a_crash(tree):
    tree.npu_smi(None, body="#!/bin/sh\necho 'Segmentation fault, or anything but a table'\n")
    hw = detect(tree)
    assert hw.family is None
    assert any("no NPU table" in p for p in hw.problems)


def test_npu_smi_on_host_path_is_ignored_under_a_sysroot(tree, tmp_path):
    # an emulated host has no PATH: a real npu-smi elsewhere must not be used
    fake_bin = tmp_path / "bin"
    fake_bin.mkdir()
    (fake_bin / "npu-smi").write_text("#!/bin/sh\nexit 0\n")
    (fake_bin / "npu-smi").chmod(0o755)
    env = clean_env(PATH=f"{fake_bin}:/usr/bin:/bin")
    hw = detect_hardware(Sysroot.at(tree.root), env)
    assert hw.npu_smi is None


def test_an_a3_npu_with_one_critical_die_is_critical(tree, tmp_path):
    """An A3 NPU is two dies: its health is its worst die's, wherever that die stands."""
    captured = (FIXTURES / "a3-npu-smi-info-idle-cann8.2.txt").read_text().splitlines()
    second_die = [i for i, line in enumerate(captured) if line.startswith("| 0     Ascend910")][1]
    captured[second_die] = captured[second_die].replace("| OK            |", "| Critical      |")
    info = tmp_path / "info.txt"
    info.write_text("\n".join(captured) + "\n")
    board = FIXTURES / "a3-npu-smi-board-chip.txt"
    tree.pci("d803", 16)
    tree.npu_smi(
        None,
        body=f'#!/bin/sh\nif [ "$1 $2" = "info -t" ]; then cat "{board}"; exit 0; fi\ncat "{info}"\n',
    )
    health = dict(detect(tree).health)
    assert health[0] == "Critical"
    assert set(health.values()) == {"OK", "Critical"}
