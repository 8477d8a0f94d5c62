import pytest

from cannbuild.host.npusmi import (
    NpuSmiParseError,
    chip_name_from_table,
    parse_board,
    parse_info,
    soc_from_board,
)

from hosttree import FIXTURES


def read(name: str) -> str:
    return (FIXTURES / name).read_text()


def test_a2_table_is_eight_910b3_npus_one_chip_each():
    info = parse_info(read("a2-910b3-npu-smi-info-cann8.3.txt"))
    assert info.table == "A2"
    assert info.version == "25.3.rc1.b061"
    assert (info.npu_count, len(info.chips)) == (8, 8)
    assert info.names == ("910B3",)


def test_910b3_is_an_a2_chip_not_a3():
    info = parse_info(read("a2-910b3-npu-smi-info-cann8.3.txt"))
    assert chip_name_from_table(info) == "Ascend910B3"


def test_a3_table_has_two_dies_per_npu():
    info = parse_info(read("a3-npu-smi-info-idle-cann8.2.txt"))
    assert info.table == "A3"
    assert (info.npu_count, len(info.chips)) == (8, 16)
    assert [(c.npu, c.chip) for c in info.chips] == [(n, c) for n in range(8) for c in (0, 1)]
    assert info.names == ("Ascend910",)
    # the A3 table alone does not name the SoC: the board query does
    assert chip_name_from_table(info) is None


@pytest.mark.parametrize(
    "fixture,soc",
    [("a2-npu-smi-board-chip.txt", "Ascend910B4"), ("a3-npu-smi-board-chip.txt", "Ascend910_9392")],
)
def test_board_query_names_the_soc(fixture, soc):
    assert soc_from_board(parse_board(read(fixture))) == soc


def test_board_without_chip_lines_gives_no_soc_but_keeps_pci_id():
    board = parse_board(read("a2-npu-smi-board.txt"))
    assert board["PCI Device ID"] == "0xD802"
    assert soc_from_board(board) is None


@pytest.mark.parametrize(
    "text", ["", "dcmi module initialize failed. ret is -8005\n", "| garbage | table |\n"]
)
def test_garbage_is_a_parse_error(text):
    with pytest.raises(NpuSmiParseError, match="no NPU table"):
        parse_info(text)
