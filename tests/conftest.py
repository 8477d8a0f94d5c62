import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from hosttree import HostTree


@pytest.fixture
def tree(tmp_path: Path) -> HostTree:
    root = tmp_path / "host"
    root.mkdir()
    return HostTree(root)
