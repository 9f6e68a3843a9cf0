"""conda_env module pieces and the lock hash (no node, no network)."""

from __future__ import annotations

import hashlib
import io
import json
import os
import tarfile

from ansible_collections.lockstep.gpu.plugins.modules import conda_env
import pytest
from ansible_collections.lockstep.gpu.plugins.module_utils.conda import entry_sha256, pip_requirements

PLACEHOLDER = "/opt/anaconda1anaconda2anaconda3"


def make_package(path, files: dict, index: dict, has_prefix: str = "") -> dict:
    with tarfile.open(path, "w:bz2") as tar:
        members = dict(files, **{"info/index.json": json.dumps(index)})
        if has_prefix:
            members["info/has_prefix"] = has_prefix
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o755 if name.startswith("bin/") else 0o644
            tar.addfile(info, io.BytesIO(data if isinstance(data, bytes) else data.encode()))
    digest = hashlib.sha256(open(path, "rb").read()).hexdigest()
    return {"name": index["name"], "version": index["version"], "build": "0", "fn": os.path.basename(path),
            "url": "file://" + str(path), "channel": "file://" + os.path.dirname(str(path)), "sha256": digest}


def test_entry_hash_ignores_its_own_field_and_key_order():
    entry = {"python": "3.11", "conda": [{"name": "six"}]}
    same = {"conda": [{"name": "six"}], "python": "3.11", "sha256": "x"}
    assert entry_sha256(entry) == entry_sha256(same)
    assert entry_sha256(entry) != entry_sha256(dict(entry, python="3.12"))


def test_pip_requirements_pin_with_hashes():
    entry = {"pip": {"packages": [{"name": "six", "version": "1.17.0", "sha256": "ab"}]}}
    assert pip_requirements(entry) == "six==1.17.0 --hash=sha256:ab\n"


def test_fetch_checks_sha256_and_names_a_dead_channel(tmp_path):
    pkg = make_package(tmp_path / "a-1-0.tar.bz2", {"bin/a": "x"}, {"name": "a", "version": "1"})
    cache = tmp_path / "pkgs"
    cache.mkdir()
    assert conda_env.fetch(pkg, str(cache), 5, "e") == str(cache / pkg["fn"])
    with pytest.raises(conda_env.InstallError, match="the lock says 00"):
        conda_env.fetch(dict(pkg, fn="b.tar.bz2", sha256="00"), str(cache), 5, "e")
    dead = dict(pkg, fn="c.tar.bz2", channel="http://127.0.0.1:9/ch", url="http://127.0.0.1:9/ch/c.tar.bz2")
    with pytest.raises(conda_env.InstallError, match="environment e: channel http://127.0.0.1:9/ch does not answer"):
        conda_env.fetch(dead, str(cache), 5, "e")


def test_extract_replaces_prefix_and_relocates_noarch_python(tmp_path):
    prefix = "/opt/conda/envs/t"
    pkg = make_package(
        tmp_path / "p-1-0.tar.bz2",
        {"bin/tool": f"#!{PLACEHOLDER}/bin/python\n", "lib/blob": PLACEHOLDER.encode() + b"/lib\0tail",
         "site-packages/p/__init__.py": "", "python-scripts/run": "x"},
        {"name": "p", "version": "1", "noarch": "python"},
        has_prefix=f"{PLACEHOLDER} text bin/tool\n{PLACEHOLDER} binary lib/blob\n")
    staging = tmp_path / "env"
    staging.mkdir()
    record = conda_env.extract(str(tmp_path / pkg["fn"]), pkg, str(staging), prefix, "3.11")
    assert (staging / "bin/tool").read_text() == f"#!{prefix}/bin/python\n"
    blob = (staging / "lib/blob").read_bytes()
    assert blob.startswith(prefix.encode() + b"/lib\0") and len(blob) == len(PLACEHOLDER) + len(b"/lib\0tail")
    assert (staging / "lib/python3.11/site-packages/p/__init__.py").exists()
    assert (staging / "bin/run").exists()
    assert record["name"] == "p" and record["sha256"] == pkg["sha256"]
    assert "lib/python3.11/site-packages/p/__init__.py" in record["files"]


def test_extract_refuses_paths_outside_the_env(tmp_path):
    pkg = make_package(tmp_path / "bad-1-0.tar.bz2", {"../evil": "x"}, {"name": "bad", "version": "1"})
    with pytest.raises(conda_env.InstallError, match="unsafe path"):
        conda_env.extract(str(tmp_path / pkg["fn"]), pkg, str(tmp_path), "/opt/x", "3.11")


def test_a_dead_channel_with_credentials_is_named_without_them(tmp_path):
    pkg = make_package(tmp_path / "a-1-0.tar.bz2", {"bin/a": "x"}, {"name": "a", "version": "1"})
    cache = tmp_path / "pkgs"
    cache.mkdir()
    dead = dict(pkg, fn="c.tar.bz2", channel="http://mirror:s3cret@127.0.0.1:9/t/tk-123/ch",
                url="http://mirror:s3cret@127.0.0.1:9/t/tk-123/ch/c.tar.bz2")
    with pytest.raises(conda_env.InstallError) as caught:
        conda_env.fetch(dead, str(cache), 5, "e")
    message = str(caught.value)
    assert "channel http://***@127.0.0.1:9/t/***/ch does not answer" in message
    assert "s3cret" not in message and "tk-123" not in message and "mirror" not in message
