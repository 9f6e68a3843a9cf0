"""conda_install: the package files a node installs from, sha256-checked,
and the py-rattler wheel unpacked for the child Python. Real files built
here (a conda .tar.bz2, wheels), file:// URLs, no network."""

from __future__ import annotations

import hashlib
import io
import json
import os
import tarfile
import zipfile

import pytest
from ansible_collections.lockstep.gpu.plugins.module_utils.conda_install import (
    InstallError, conda_file, installer_dir, missing_wheels, rattler_args)


def sha256(path) -> str:
    return hashlib.sha256(open(path, "rb").read()).hexdigest()


def conda_package(path, name="tiny", version="1.0") -> dict:
    """A conda package (.tar.bz2 with info/index.json and one file) and its lock entry."""
    with tarfile.open(path, "w:bz2") as tar:
        for member, data in {"info/index.json": json.dumps({"name": name, "version": version, "build": "0"}),
                             "share/tiny.txt": "tiny\n"}.items():
            info = tarfile.TarInfo(member)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data.encode()))
    return {"name": name, "version": version, "fn": os.path.basename(path), "url": "file://" + str(path),
            "channel": "file://" + os.path.dirname(str(path)), "sha256": sha256(path)}


def wheel(directory, name="tiny", version="1.0", members=None) -> dict:
    """A wheel (a zip with a dist-info) and its lock entry."""
    filename = f"{name}-{version}-py3-none-any.whl"
    path = os.path.join(str(directory), filename)
    dist = f"{name}-{version}.dist-info"
    with zipfile.ZipFile(path, "w") as zf:
        for member, data in (members or {f"{name}/__init__.py": "VERSION = %r\n" % version,
                                         f"{dist}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
                                         f"{dist}/WHEEL": "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
                                         f"{dist}/RECORD": ""}).items():
            zf.writestr(member, data)
    return {"name": name, "version": version, "filename": filename, "sha256": sha256(path)}


@pytest.fixture
def channel(tmp_path):
    (tmp_path / "channel").mkdir()
    (tmp_path / "pkgs").mkdir()
    return conda_package(tmp_path / "channel" / "tiny-1.0-0.tar.bz2")


def test_a_package_already_in_the_cache_is_used_without_fetching(tmp_path, channel):
    cached = tmp_path / "pkgs" / channel["fn"]
    cached.write_bytes((tmp_path / "channel" / channel["fn"]).read_bytes())
    gone = dict(channel, url="file://" + str(tmp_path / "nowhere" / channel["fn"]))
    assert conda_file(gone, str(tmp_path / "pkgs"), False, 5, "e") == str(cached)
    assert conda_file(gone, str(tmp_path / "pkgs"), True, 5, "e") == str(cached)


def test_a_missing_package_is_fetched_from_its_url_when_allowed(tmp_path, channel):
    path = conda_file(channel, str(tmp_path / "pkgs"), True, 5, "e")
    assert path == str(tmp_path / "pkgs" / channel["fn"]) and sha256(path) == channel["sha256"]
    assert sorted(os.listdir(tmp_path / "pkgs")) == [channel["fn"]]


def test_without_fetch_a_missing_package_fails_naming_file_dir_and_sha256(tmp_path, channel):
    with pytest.raises(InstallError) as caught:
        conda_file(channel, str(tmp_path / "pkgs"), False, 5, "train")
    assert str(caught.value) == (f"environment train: {channel['fn']} is not in {tmp_path / 'pkgs'} with sha256 "
                                 f"{channel['sha256']} (the conda role copies it there from the cluster cache)")
    assert os.listdir(tmp_path / "pkgs") == []


def test_a_cached_package_with_another_sha256_is_not_used(tmp_path, channel):
    (tmp_path / "pkgs" / channel["fn"]).write_bytes(b"altered")
    with pytest.raises(InstallError, match="is not in"):
        conda_file(channel, str(tmp_path / "pkgs"), False, 5, "e")
    assert sha256(conda_file(channel, str(tmp_path / "pkgs"), True, 5, "e")) == channel["sha256"]


def test_a_fetched_package_with_another_sha256_fails_and_leaves_nothing(tmp_path, channel):
    with pytest.raises(InstallError) as caught:
        conda_file(dict(channel, sha256="00" * 32), str(tmp_path / "pkgs"), True, 5, "e")
    assert str(caught.value) == f"environment e: {channel['url']} has sha256 {channel['sha256']}, the lock says {'00' * 32}"
    assert os.listdir(tmp_path / "pkgs") == []


def test_a_dead_channel_is_named(tmp_path, channel):
    dead = dict(channel, channel="http://127.0.0.1:9/ch", url="http://127.0.0.1:9/ch/" + channel["fn"])
    with pytest.raises(InstallError, match=r"^environment e: channel http://127.0.0.1:9/ch does not answer: "
                                           r"cannot fetch http://127.0.0.1:9/ch/tiny-1.0-0.tar.bz2: "):
        conda_file(dead, str(tmp_path / "pkgs"), True, 5, "e")
    assert os.listdir(tmp_path / "pkgs") == []


def test_missing_wheels_names_absent_and_altered_wheels(tmp_path):
    good = wheel(tmp_path, "good")
    altered = wheel(tmp_path, "altered")
    (tmp_path / altered["filename"]).write_bytes(b"altered")
    absent = dict(good, filename="absent-1.0-py3-none-any.whl")
    assert missing_wheels([good, altered, absent], str(tmp_path)) == [altered, absent]
    assert missing_wheels([good], str(tmp_path)) == []
    assert missing_wheels([good], str(tmp_path / "no-such-dir")) == [good]


def test_the_installer_is_unpacked_once_and_again_for_another_wheel(tmp_path):
    wheels, pkgs = tmp_path / "wheels", tmp_path / "pkgs"
    wheels.mkdir()
    installer = wheel(wheels, "rattler", "0.28.0")
    target = installer_dir(installer, str(wheels), str(pkgs))
    assert target == str(pkgs / ".installer" / "rattler-0.28.0")
    assert (pkgs / ".installer/rattler-0.28.0/rattler/__init__.py").read_text() == "VERSION = '0.28.0'\n"
    assert (pkgs / ".installer/rattler-0.28.0/.lockstep-sha256").read_text() == installer["sha256"] + "\n"
    # Unpacked once: the stamp spares the wheel, even when the cache no longer holds it.
    (wheels / installer["filename"]).unlink()
    assert installer_dir(installer, str(wheels), str(pkgs)) == target
    # Another wheel of the same name and version (another sha256) is unpacked again, the old files gone.
    other = wheel(wheels, "rattler", "0.28.0", members={"rattler/core.py": "OTHER = 1\n"})
    assert installer_dir(other, str(wheels), str(pkgs)) == target
    assert sorted(os.listdir(target)) == [".lockstep-sha256", "rattler"]
    assert os.listdir(os.path.join(target, "rattler")) == ["core.py"]


def test_an_installer_missing_or_altered_fails_naming_it(tmp_path):
    installer = wheel(tmp_path, "rattler", "0.28.0")
    message = f"the installer {installer['filename']} is not in {tmp_path} with sha256 {installer['sha256']}"
    (tmp_path / installer["filename"]).write_bytes(b"altered")
    with pytest.raises(InstallError) as caught:
        installer_dir(installer, str(tmp_path), str(tmp_path / "pkgs"))
    assert str(caught.value) == message
    (tmp_path / installer["filename"]).unlink()
    with pytest.raises(InstallError) as caught:
        installer_dir(installer, str(tmp_path), str(tmp_path / "pkgs"))
    assert str(caught.value) == message
    assert not (tmp_path / "pkgs" / ".installer").exists()


@pytest.mark.parametrize("member", ["../evil.py", "/etc/evil.py", "rattler/../../evil.py"])
def test_an_installer_with_a_path_outside_its_folder_is_refused(tmp_path, member):
    installer = wheel(tmp_path, "rattler", "0.28.0", members={member: "x"})
    with pytest.raises(InstallError, match="unsafe path " + member):
        installer_dir(installer, str(tmp_path), str(tmp_path / "pkgs"))
    assert not (tmp_path / "pkgs").exists() or os.listdir(tmp_path / "pkgs" / ".installer") == []
    assert not (tmp_path / "evil.py").exists()


def test_rattler_args_is_the_child_scripts_json():
    assert json.loads(rattler_args(["/p/a.conda"], "/e.new", "/e", "/c")) == {
        "paths": ["/p/a.conda"], "staging": "/e.new", "prefix": "/e", "cache": "/c"}
