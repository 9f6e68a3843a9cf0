"""The cluster cache (module_utils conda_cache and the conda_cache module):
every file of a lock fetched once, sha256-checked, from real files built
here -- conda packages behind file:// URLs, wheels behind pip --find-links
(this Python's own pip, --no-index): no network."""

from __future__ import annotations

import hashlib
import io
import json
import os
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest
from ansible_collections.lockstep.gpu.plugins.module_utils import conda_cache
from ansible_collections.lockstep.gpu.plugins.module_utils.conda_cache import CacheError, cache_files, fill
from ansible_collections.lockstep.gpu.plugins.modules import conda_cache as conda_cache_module

COLLECTIONS = str(Path(conda_cache_module.__file__).parents[5])


def sha256(path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def conda_package(channel: Path, name: str, payload: str = "x") -> dict:
    path = channel / f"{name}-1.0-0.tar.bz2"
    with tarfile.open(path, "w:bz2") as tar:
        for member, data in {"info/index.json": json.dumps({"name": name, "version": "1.0", "build": "0"}),
                             f"share/{name}.txt": payload}.items():
            info = tarfile.TarInfo(member)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data.encode()))
    return {"name": name, "version": "1.0", "fn": path.name, "url": path.as_uri(), "sha256": sha256(path)}


def wheel(links: Path, name: str, version: str = "1.0") -> dict:
    filename = f"{name}-{version}-py3-none-any.whl"
    dist = f"{name}-{version}.dist-info"
    with zipfile.ZipFile(links / filename, "w") as zf:
        zf.writestr(f"{name}/__init__.py", "")
        zf.writestr(f"{dist}/METADATA", f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
        zf.writestr(f"{dist}/WHEEL", "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        zf.writestr(f"{dist}/RECORD", "")
    return {"name": name, "version": version, "filename": filename, "sha256": sha256(links / filename)}


@pytest.fixture
def lock(tmp_path):
    """Two environments sharing a conda package, each with a wheel, and the installer wheel."""
    channel, links = tmp_path / "channel", tmp_path / "links"
    channel.mkdir()
    links.mkdir()
    shared, alone = conda_package(channel, "shared", "s" * 1000), conda_package(channel, "alone")
    pip = {"index_url": "", "find_links": str(links)}
    return {
        "format": 2,
        "installer": dict(wheel(links, "rattler_standin", "0.28.0"), python="3.11", platform="linux-64", **pip),
        "environments": {
            "a": {"python": "3.11", "platform": "linux-64", "conda": [shared, alone],
                  "pip": dict(pip, packages=[wheel(links, "wa")])},
            "b": {"python": "3.11", "platform": "linux-64", "conda": [shared],
                  "pip": dict(pip, packages=[wheel(links, "wb")])},
        },
    }


def size(tmp_path, *names) -> int:
    return sum(os.path.getsize(p) for n in names for p in (tmp_path / "channel" / n, tmp_path / "links" / n)
               if p.exists())


def test_cache_files_lists_an_environments_files_and_the_installer(lock):
    assert cache_files(lock, ["b"]) == ["pip/rattler_standin-0.28.0-py3-none-any.whl", "pip/wb-1.0-py3-none-any.whl",
                                        "shared-1.0-0.tar.bz2"]
    assert cache_files(lock) == sorted(["alone-1.0-0.tar.bz2", "shared-1.0-0.tar.bz2",
                                        "pip/rattler_standin-0.28.0-py3-none-any.whl",
                                        "pip/wa-1.0-py3-none-any.whl", "pip/wb-1.0-py3-none-any.whl"])


def test_fill_fetches_each_file_once_then_nothing(tmp_path, lock):
    cache = tmp_path / "cache"
    first = fill(str(cache), lock, ["b"])
    assert sorted(first["fetched"]) == ["pip/rattler_standin-0.28.0-py3-none-any.whl", "pip/wb-1.0-py3-none-any.whl",
                                        "shared-1.0-0.tar.bz2"]
    assert first["bytes"] == size(tmp_path, "shared-1.0-0.tar.bz2", "wb-1.0-py3-none-any.whl",
                                  "rattler_standin-0.28.0-py3-none-any.whl")
    assert first["files"] == {"b": cache_files(lock, ["b"])}
    for rel in first["fetched"]:
        assert sha256(cache / rel) == sha256(tmp_path / ("links" if rel.startswith("pip/") else "channel")
                                             / os.path.basename(rel))
    # Then a only fetches what b did not bring.
    second = fill(str(cache), lock)
    assert sorted(second["fetched"]) == ["alone-1.0-0.tar.bz2", "pip/wa-1.0-py3-none-any.whl"]
    assert second["bytes"] == size(tmp_path, "alone-1.0-0.tar.bz2", "wa-1.0-py3-none-any.whl")
    assert set(second["files"]) == {"a", "b"}
    assert fill(str(cache), lock) == dict(second, fetched=[], bytes=0)


def test_fill_records_a_marker_for_each_file_and_trusts_it(tmp_path, lock):
    cache = tmp_path / "cache"
    fill(str(cache), lock, ["b"])
    # Wheels are marked when fetched, conda packages when next checked.
    assert sorted(os.listdir(cache / "pip" / ".sha256")) == [
        "rattler_standin-0.28.0-py3-none-any.whl", "wb-1.0-py3-none-any.whl"]
    assert fill(str(cache), lock, ["b"])["fetched"] == []
    marker = cache / ".sha256" / "shared-1.0-0.tar.bz2"
    stat = os.stat(cache / "shared-1.0-0.tar.bz2")
    shared = lock["environments"]["b"]["conda"][0]["sha256"]
    assert marker.read_text() == f"{shared} {stat.st_size} {stat.st_mtime_ns}\n"
    # A file altered in the cache (size or mtime no longer the marker's) is checked again and fetched again.
    (cache / "shared-1.0-0.tar.bz2").write_bytes(b"altered")
    again = fill(str(cache), lock, ["b"])
    assert again["fetched"] == ["shared-1.0-0.tar.bz2"] and sha256(cache / "shared-1.0-0.tar.bz2") == shared


def test_a_file_already_present_without_marker_is_checked_not_fetched(tmp_path, lock):
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "alone-1.0-0.tar.bz2").write_bytes((tmp_path / "channel" / "alone-1.0-0.tar.bz2").read_bytes())
    (tmp_path / "channel" / "alone-1.0-0.tar.bz2").unlink()  # the channel would fail
    result = fill(str(cache), lock, ["a"])
    assert "alone-1.0-0.tar.bz2" not in result["fetched"] and "shared-1.0-0.tar.bz2" in result["fetched"]
    assert (cache / ".sha256" / "alone-1.0-0.tar.bz2").exists()


def test_a_conda_package_with_another_sha256_fails_naming_it_and_leaves_no_file(tmp_path, lock):
    alone = lock["environments"]["a"]["conda"][1]
    (tmp_path / "channel" / alone["fn"]).write_bytes(b"another build")
    cache = tmp_path / "cache"
    with pytest.raises(CacheError) as caught:
        fill(str(cache), lock, ["a"])
    got = sha256(tmp_path / "channel" / alone["fn"])
    assert str(caught.value) == f"{alone['url']} has sha256 {got}, the lock says {alone['sha256']}"
    assert not (cache / alone["fn"]).exists() and not (cache / ".sha256" / alone["fn"]).exists()
    assert [f for f in os.listdir(cache) if f.startswith(".fetch-")] == []


def test_an_unreachable_package_fails_naming_its_url(tmp_path, lock):
    alone = lock["environments"]["a"]["conda"][1]
    (tmp_path / "channel" / alone["fn"]).unlink()
    with pytest.raises(CacheError, match="^cannot fetch " + alone["url"]):
        fill(str(tmp_path / "cache"), lock, ["a"])
    assert not (tmp_path / "cache" / alone["fn"]).exists()


def test_a_wheel_with_another_sha256_fails_naming_it(tmp_path, lock):
    wb = lock["environments"]["b"]["pip"]["packages"][0]
    lock["environments"]["b"]["pip"]["packages"][0] = dict(wb, sha256="00" * 32)
    with pytest.raises(CacheError) as caught:
        fill(str(tmp_path / "cache"), lock, ["b"])
    assert str(caught.value).startswith("pip cannot get wb-1.0-py3-none-any.whl, rattler_standin-0.28.0-py3-none-any.whl "
                                        f"from {tmp_path / 'links'}: ")
    assert "Expected sha256 " + "00" * 32 in str(caught.value)
    assert not (tmp_path / "cache" / "pip" / wb["filename"]).exists()


def test_pip_target_args_pick_the_nodes_wheels():
    args = conda_cache.pip_target_args("3.11", "linux-64")
    assert args[:5] == ["--only-binary=:all:", "--python-version", "3.11", "--implementation", "cp"]
    assert args[5:7] == ["--platform", "manylinux_2_28_x86_64"] and "linux_x86_64" in args
    assert conda_cache.pip_source_args("", "/w") == ["--no-index", "--find-links", "/w"]
    assert conda_cache.pip_source_args("https://pypi.org/simple", "") == ["--index-url", "https://pypi.org/simple"]


def run_module(tmp_path, check_mode=False, **args):
    payload = {"ANSIBLE_MODULE_ARGS": dict(args, _ansible_check_mode=check_mode, _ansible_tmpdir=str(tmp_path))}
    args_file = tmp_path / "args.json"
    args_file.write_text(json.dumps(payload))
    done = subprocess.run([sys.executable, conda_cache_module.__file__, str(args_file)], capture_output=True,
                          text=True, env=dict(os.environ, PYTHONPATH=os.pathsep.join(
                              filter(None, [COLLECTIONS, os.environ.get("PYTHONPATH")]))), check=False)
    return json.loads(done.stdout)


def test_module_check_mode_names_what_it_would_fetch_and_fetches_nothing(tmp_path, lock):
    cache = tmp_path / "cache"
    result = run_module(tmp_path, True, dir=str(cache), lock=lock, environments=["b"])
    assert result["changed"] is True and result["bytes"] == 0
    assert result["fetched"] == cache_files(lock, ["b"]) and result["files"] == {"b": cache_files(lock, ["b"])}
    assert not cache.exists()


def test_module_fetches_then_reports_no_change(tmp_path, lock):
    cache = tmp_path / "cache"
    result = run_module(tmp_path, dir=str(cache), lock=lock)
    assert result["changed"] is True and len(result["fetched"]) == 5 and result["bytes"] > 0
    assert run_module(tmp_path, dir=str(cache), lock=lock)["changed"] is False
    check = run_module(tmp_path, True, dir=str(cache), lock=lock)
    assert check["changed"] is False and check["fetched"] == []


def test_module_fails_on_environments_not_in_the_lock(tmp_path, lock):
    result = run_module(tmp_path, dir=str(tmp_path / "cache"), lock=lock, environments=["b", "train", "zz"])
    assert result["failed"] is True
    assert result["msg"] == "environments train, zz are not in the lock: run scripts/conda-lock"


def test_module_failure_hides_credentials(tmp_path, lock):
    alone = lock["environments"]["a"]["conda"][1]
    lock["environments"]["a"]["conda"][1] = dict(alone, url="http://mirror:s3cret@127.0.0.1:9/t/tk-123/ch/a.tar.bz2")
    result = run_module(tmp_path, dir=str(tmp_path / "cache"), lock=lock, environments=["a"], timeout=5)
    assert result["failed"] is True
    assert result["msg"].startswith(f"cluster cache {tmp_path / 'cache'}: cannot fetch http://***@127.0.0.1:9/t/***/ch/")
    assert "s3cret" not in result["msg"] and "tk-123" not in result["msg"]
