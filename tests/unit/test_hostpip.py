"""This machine's pip settings as a container gets them (tests/hostpip.py)."""

from hostpip import FILES_AT, for_container, settings


def test_the_environment_beats_the_install_section_which_beats_global():
    listing = (
        ":env:.find-links='/env/wheels'\n"
        "global.find-links='/global/wheels'\n"
        "global.index-url='https://global.example/simple'\n"
        "install.index-url='https://install.example/simple'\n"
        "global.cache-dir='/root/.cache/pip'\n"
        "global.log='/var/log/pip.log'\n"
    )
    assert settings(listing) == {
        "index-url": "https://install.example/simple",
        "find-links": "/env/wheels",
    }  # a cache folder or a log file is about the host: it stays there


def test_local_folders_keep_their_path_and_files_are_mounted_beside_the_images_own(tmp_path):
    wheels = tmp_path / "wheels"
    index = tmp_path / "pypi" / "simple"
    index.mkdir(parents=True)
    wheels.mkdir()
    constraints = tmp_path / "constraints.txt"
    constraints.write_text("torch<=2.14.1\n")
    cert = tmp_path / "ca.crt"
    cert.write_text("pem\n")
    env, mounts = for_container(
        {
            "find-links": f"{wheels} file://{wheels} https://wheels.example/",
            "extra-index-url": f"file://{index} https://mirror.example/simple",
            "constraint": str(constraints),
            "cert": str(cert),
            "default-timeout": "180",
        }
    )
    assert env == {
        "PIP_FIND_LINKS": f"{wheels} file://{wheels} https://wheels.example/",
        "PIP_EXTRA_INDEX_URL": f"file://{index} https://mirror.example/simple",
        "PIP_CONSTRAINT": f"{FILES_AT}/constraint-constraints.txt",
        "PIP_CERT": f"{FILES_AT}/cert-ca.crt",
        "PIP_DEFAULT_TIMEOUT": "180",
    }
    # a local simple index links its files beside itself (../../files/): its parent is mounted
    assert mounts == [
        (str(wheels), str(wheels)),
        (str(index.parent), str(index.parent)),
        (str(constraints), f"{FILES_AT}/constraint-constraints.txt"),
        (str(cert), f"{FILES_AT}/cert-ca.crt"),
    ]


def test_a_path_that_is_not_there_is_passed_on_but_not_mounted(tmp_path):
    env, mounts = for_container({"find-links": str(tmp_path / "gone")})
    assert env == {"PIP_FIND_LINKS": str(tmp_path / "gone")} and mounts == []
