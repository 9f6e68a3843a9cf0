"""The conda_env module, run as Ansible runs it (a child Python with its
arguments file), on real files built here: a conda package (.tar.bz2) behind
a file:// URL and the installer wheel. The install itself needs py-rattler in
this Python (the repository's .venv has it; ansible-test's units venv does
not, and skips that test)."""

from __future__ import annotations

import hashlib
import importlib.util
import io
import json
import os
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest
from ansible_collections.lockstep.gpu.plugins.module_utils.conda import entry_sha256, pip_requirements, scan_env
from ansible_collections.lockstep.gpu.plugins.modules import conda_env

COLLECTIONS = str(Path(conda_env.__file__).parents[5])
PLACEHOLDER = "/opt/anaconda1anaconda2anaconda3"


def sha256(path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def conda_package(channel: Path, name="tiny", version="1.0") -> dict:
    """A noarch conda package: share/<name>.txt holds the prefix placeholder (text mode)."""
    text = f"prefix={PLACEHOLDER}\n".encode()
    paths = {"paths_version": 1, "paths": [{
        "_path": f"share/{name}.txt", "path_type": "hardlink", "sha256": hashlib.sha256(text).hexdigest(),
        "size_in_bytes": len(text), "file_mode": "text", "prefix_placeholder": PLACEHOLDER}]}
    index = {"name": name, "version": version, "build": "0", "build_number": 0, "depends": [],
             "subdir": "noarch", "noarch": "generic"}
    path = channel / f"{name}-{version}-0.tar.bz2"
    with tarfile.open(path, "w:bz2") as tar:
        for member, data in {f"share/{name}.txt": text, "info/index.json": json.dumps(index).encode(),
                             "info/paths.json": json.dumps(paths).encode(),
                             "info/files": f"share/{name}.txt\n".encode()}.items():
            info = tarfile.TarInfo(member)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return {"name": name, "version": version, "build": "0", "fn": path.name, "url": path.as_uri(),
            "channel": channel.as_uri(), "sha256": sha256(path)}


def installer_wheel(directory: Path, package_dir: str = "") -> dict:
    """The installer wheel: this Python's own py-rattler packed as one, or a wheel without it."""
    filename = "py_rattler-0.28.0-cp38-abi3-manylinux_2_17_x86_64.whl"
    with zipfile.ZipFile(directory / filename, "w") as zf:
        zf.writestr("py_rattler-0.28.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: py-rattler\nVersion: 0.28.0\n")
        for root, _dirs, files in os.walk(package_dir) if package_dir else ():
            for name in files:
                if "__pycache__" not in root:
                    path = os.path.join(root, name)
                    zf.write(path, os.path.relpath(path, os.path.dirname(package_dir)))
    return {"name": "py-rattler", "version": "0.28.0", "filename": filename, "sha256": sha256(directory / filename),
            "python": "3.11", "platform": "linux-64", "index_url": "", "find_links": ""}


def lock_entry(*packages) -> dict:
    entry = {"python": "3.11", "platform": "linux-64", "conda": list(packages),
             "pip": {"index_url": "", "find_links": "", "packages": []}}
    entry["sha256"] = entry_sha256(entry)
    return entry


def run(tmp_path, check_mode=False, **args):
    payload = {"ANSIBLE_MODULE_ARGS": dict(args, _ansible_check_mode=check_mode, _ansible_tmpdir=str(tmp_path))}
    args_file = tmp_path / "args.json"
    args_file.write_text(json.dumps(payload))
    done = subprocess.run([sys.executable, conda_env.__file__, str(args_file)], capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=os.pathsep.join(
                              filter(None, [COLLECTIONS, os.environ.get("PYTHONPATH")]))), check=False)
    return json.loads(done.stdout)


@pytest.fixture
def tiny(tmp_path):
    (tmp_path / "channel").mkdir()
    (tmp_path / "pkgs").mkdir()
    return conda_package(tmp_path / "channel")


def test_entry_hash_ignores_its_own_field_and_key_order():
    entry = {"python": "3.11", "conda": [{"name": "six"}]}
    same = {"conda": [{"name": "six"}], "python": "3.11", "sha256": "x"}
    assert entry_sha256(entry) == entry_sha256(same)
    assert entry_sha256(entry) != entry_sha256(dict(entry, python="3.12"))


def test_pip_requirements_pin_with_hashes():
    entry = {"pip": {"packages": [{"name": "six", "version": "1.17.0", "sha256": "ab"}]}}
    assert pip_requirements(entry) == "six==1.17.0 --hash=sha256:ab\n"


def test_an_edited_lock_entry_fails_naming_the_environment(tmp_path, tiny):
    entry = dict(lock_entry(tiny), python="3.12")
    result = run(tmp_path, name="train", prefix=str(tmp_path / "env"), lock=entry,
                 installer=installer_wheel(tmp_path), pkgs_dir=str(tmp_path / "pkgs"))
    assert result["failed"] is True
    assert result["msg"] == (f"environment train: its lock entry was edited (sha256 {entry['sha256']}, content "
                             f"{entry_sha256(entry)}): run scripts/conda-lock again")


def test_check_mode_says_why_an_environment_would_be_built(tmp_path, tiny):
    args = {"name": "e", "lock": lock_entry(tiny), "installer": installer_wheel(tmp_path),
            "pkgs_dir": str(tmp_path / "pkgs")}
    result = run(tmp_path, True, prefix=str(tmp_path / "env"), **args)
    assert result["changed"] is True and result["reason"] == "not installed"
    (tmp_path / "hand-made" / "conda-meta").mkdir(parents=True)
    result = run(tmp_path, True, prefix=str(tmp_path / "hand-made"), **args)
    assert result["changed"] is True and result["reason"] == "not installed from a lock"
    assert not (tmp_path / "env").exists() and os.listdir(tmp_path / "pkgs") == []


def test_without_fetch_a_missing_package_fails_naming_it_and_the_env_is_untouched(tmp_path, tiny):
    old = tmp_path / "env" / "conda-meta"
    old.mkdir(parents=True)
    (old / "keep.json").write_text('{"name": "keep", "version": "1"}')
    result = run(tmp_path, name="e", prefix=str(tmp_path / "env"), lock=lock_entry(tiny),
                 installer=installer_wheel(tmp_path), pkgs_dir=str(tmp_path / "pkgs"), fetch=False)
    assert result["failed"] is True and result["reason"] == "not installed from a lock"
    assert result["msg"] == (f"environment e: {tiny['fn']} is not in {tmp_path / 'pkgs'} with sha256 {tiny['sha256']} "
                             "(the conda role copies it there from the cluster cache)")
    assert os.listdir(tmp_path / "env" / "conda-meta") == ["keep.json"]


def test_a_missing_installer_fails_naming_it(tmp_path, tiny):
    files = tmp_path / "cluster-cache"
    (files / "pip").mkdir(parents=True)
    (files / tiny["fn"]).write_bytes((tmp_path / "channel" / tiny["fn"]).read_bytes())
    installer = installer_wheel(tmp_path)
    result = run(tmp_path, name="e", prefix=str(tmp_path / "env"), lock=lock_entry(tiny), installer=installer,
                 pkgs_dir=str(tmp_path / "pkgs"), files_dir=str(files))
    assert result["failed"] is True
    assert result["msg"] == (f"environment e: {installer['filename']} not in {files / 'pip'} with the lock's sha256 "
                             "(the conda role copies them there from the cluster cache)")
    assert not (tmp_path / "env").exists() and sorted(os.listdir(files)) == ["pip", tiny["fn"]]


def test_a_dead_channel_with_credentials_is_named_without_them(tmp_path, tiny):
    dead = dict(tiny, channel="http://mirror:s3cret@127.0.0.1:9/t/tk-123/ch",
                url="http://mirror:s3cret@127.0.0.1:9/t/tk-123/ch/" + tiny["fn"])
    result = run(tmp_path, name="e", prefix=str(tmp_path / "env"), lock=lock_entry(dead),
                 installer=installer_wheel(tmp_path), pkgs_dir=str(tmp_path / "pkgs"), timeout=5)
    assert result["failed"] is True
    assert result["msg"].startswith("environment e: channel http://***@127.0.0.1:9/t/***/ch does not answer: "
                                    "cannot fetch http://***@127.0.0.1:9/t/***/ch/tiny-1.0-0.tar.bz2: ")
    assert "s3cret" not in result["msg"] and "tk-123" not in result["msg"] and "mirror" not in result["msg"]


RATTLER = importlib.util.find_spec("rattler")


@pytest.mark.skipif(RATTLER is None, reason="needs py-rattler in this Python (the repository's .venv)")
def test_install_with_py_rattler_then_no_change_then_rebuild_when_altered(tmp_path, tiny):
    files = tmp_path / "cluster-cache"
    (files / "pip").mkdir(parents=True)
    (files / tiny["fn"]).write_bytes((tmp_path / "channel" / tiny["fn"]).read_bytes())
    installer = installer_wheel(files / "pip", os.path.dirname(RATTLER.origin))
    prefix = tmp_path / "envs" / "e"
    args = {"name": "e", "prefix": str(prefix), "lock": lock_entry(tiny), "installer": installer,
            "pkgs_dir": str(tmp_path / "pkgs"), "files_dir": str(files)}
    result = run(tmp_path, **args)
    assert result["changed"] is True and result["reason"] == "not installed", result.get("msg")
    # py-rattler replaced the placeholder with the final prefix, not the staging folder it installed into.
    assert (prefix / "share" / "tiny.txt").read_text() == f"prefix={prefix}\n"
    assert json.loads((prefix / "conda-meta" / "tiny-1.0-0.json").read_text())["sha256"] == tiny["sha256"]
    assert (prefix / "conda-meta" / "lockstep-lock.sha256").read_text() == args["lock"]["sha256"] + "\n"
    assert result["packages_sha256"] == scan_env(str(prefix))["packages_sha256"]
    assert sorted(os.listdir(prefix.parent)) == ["e"]
    again = run(tmp_path, **args)
    assert again["changed"] is False and again["reason"] == ""
    # A package added by hand: found, and the environment rebuilt as the lock says.
    (prefix / "conda-meta" / "extra-1-0.json").write_text('{"name": "extra", "version": "1"}')
    check = run(tmp_path, True, **args)
    assert check["changed"] is True and check["reason"].startswith("packages differ from the lock")
    rebuilt = run(tmp_path, **args)
    assert rebuilt["changed"] is True and not (prefix / "conda-meta" / "extra-1-0.json").exists()
    assert rebuilt["packages_sha256"] == result["packages_sha256"]
