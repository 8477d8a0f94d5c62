import ipaddress
import signal
import socket
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from hosttree import HostTree


def pytest_configure(config):
    """A suite started in the background of a script (`.ci/run &`) inherits SIGINT
    ignored, and so would every cannbuild it starts; the Ctrl-C tests play a user at a
    terminal, whose foreground job has SIGINT.  Handled here, the children start with it."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture
def tree(tmp_path: Path) -> HostTree:
    root = tmp_path / "host"
    root.mkdir()
    return HostTree(root)


def _local(address) -> bool:
    if not isinstance(address, tuple):  # AF_UNIX: a path
        return True
    host = address[0]
    if host in ("localhost", ""):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:  # a host name: name resolution itself is the network
        return False


@pytest.fixture(autouse=True)
def no_network(request, monkeypatch):
    """Unit tests never reach the network: a connection to anything but this machine
    (loopback or a unix socket) fails the test that tried it."""
    if request.node.get_closest_marker("integration"):
        return
    real_connect = socket.socket.connect
    real_connect_ex = socket.socket.connect_ex

    def connect(self, address):
        if not _local(address):
            raise AssertionError(f"a unit test tried to reach {address!r} over the network")
        return real_connect(self, address)

    def connect_ex(self, address):
        if not _local(address):
            raise AssertionError(f"a unit test tried to reach {address!r} over the network")
        return real_connect_ex(self, address)

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket.socket, "connect_ex", connect_ex)
