"""tests/standin/build_apt_repo.py: the signed local TEST STAND-IN apt repository.

Builds real .deb files and a real signed repository in a temporary
directory (needs dpkg-deb, gpg and gpgv, as the molecule scenarios do).
"""

from __future__ import annotations

import gzip
import hashlib
import shutil
import subprocess
import textwrap
import zipfile
from pathlib import Path

import pytest

from tests.standin import build_apt_repo as bar

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(
    not all(shutil.which(t) for t in ("dpkg-deb", "gpg", "gpgv", "gpg-agent")),
    reason="needs dpkg-deb and gnupg",
)
TOOLKIT = ["libnvidia-container1", "libnvidia-container-tools", "nvidia-container-toolkit-base",
           "nvidia-container-toolkit"]


def stanzas(text: str) -> dict:
    out = {}
    for block in text.strip().split("\n\n"):
        fields, key = {}, None
        for line in block.splitlines():
            if line.startswith(" ") and key:
                fields[key] += "\n" + line
            else:
                key, _, value = line.partition(": ")
                fields[key] = value
        out[fields["Package"]] = fields
    return out


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("standin") / "standin-apt"
    assert bar.main(["--out", str(out)]) == 0
    return out


def flat(repo: Path) -> Path:
    return repo / "libnvidia-container" / "stable" / "deb" / bar.native_arch()


def test_nvidia_names_versions_and_dependency_structure(repo):
    packages = stanzas((flat(repo) / "Packages").read_text())
    assert sorted(packages) == sorted(TOOLKIT)
    assert {p["Version"] for p in packages.values()} == {"1.14.3-1"}
    toolkit = packages["nvidia-container-toolkit"]["Depends"]
    assert "nvidia-container-toolkit-base (= 1.14.3-1)" in toolkit
    assert "libnvidia-container-tools (>= 1.14.3-1), libnvidia-container-tools (<< 2.0.0)" in toolkit
    assert "libnvidia-container1 (>= 1.14.3-1)" in packages["libnvidia-container-tools"]["Depends"]


def test_every_package_says_it_is_a_test_standin(repo):
    for name, fields in stanzas((flat(repo) / "Packages").read_text()).items():
        summary = fields["Description"].splitlines()[0]
        assert summary.endswith("(Lockstep TEST STAND-IN)"), name
        assert "It is not NVIDIA's package" in " ".join(fields["Description"].split()), name


def test_packages_index_matches_the_debs(repo):
    for name, fields in stanzas((flat(repo) / "Packages").read_text()).items():
        deb = flat(repo) / fields["Filename"]
        data = deb.read_bytes()
        assert fields["Size"] == str(len(data)) and fields["SHA256"] == hashlib.sha256(data).hexdigest()
        assert subprocess.run(["dpkg-deb", "-f", str(deb), "Package"], capture_output=True, text=True,
                              check=True).stdout.strip() == name
    assert gzip.decompress((flat(repo) / "Packages.gz").read_bytes()) == (flat(repo) / "Packages").read_bytes()


def test_release_hashes_and_signatures_verify_with_the_exported_keyring(repo):
    release = (flat(repo) / "Release").read_text()
    for name in ("Packages", "Packages.gz"):
        data = (flat(repo) / name).read_bytes()
        assert f" {hashlib.sha256(data).hexdigest()} {len(data):>8} {name}" in release
    keyring = repo / "lockstep-standin.gpg"
    inline = subprocess.run(["gpgv", "--keyring", str(keyring), str(flat(repo) / "InRelease")],
                            capture_output=True, text=True, check=False)
    assert inline.returncode == 0, inline.stderr
    detached = subprocess.run(["gpgv", "--keyring", str(keyring), str(flat(repo) / "Release.gpg"),
                               str(flat(repo) / "Release")], capture_output=True, text=True, check=False)
    assert detached.returncode == 0, detached.stderr
    assert (repo / "lockstep-standin.asc").read_text().startswith("-----BEGIN PGP PUBLIC KEY BLOCK-----")
    shown = subprocess.run(["gpg", "--show-keys", "--with-colons", str(keyring)], capture_output=True,
                           text=True, check=True).stdout
    fingerprint = next(line.split(":")[9] for line in shown.splitlines() if line.startswith("fpr:"))
    assert (repo / "lockstep-standin.fpr").read_text().strip() == fingerprint


def test_no_secret_key_and_no_build_leftovers(repo):
    for path in repo.rglob("*"):
        if path.is_file() and not path.suffix == ".deb":
            assert b"PRIVATE KEY" not in path.read_bytes(), path
    assert not list(repo.parent.glob(".standin-build.*"))


def test_files_links_and_conffiles(repo):
    base = flat(repo) / f"nvidia-container-toolkit-base_1.14.3-1_{bar.native_arch()}.deb"
    listing = subprocess.run(["dpkg-deb", "-c", str(base)], capture_output=True, text=True, check=True).stdout
    assert "./usr/bin/nvidia-container-runtime" in listing and "rwxr-xr-x root/root" in listing
    conffiles = subprocess.run(["dpkg-deb", "-I", str(base), "conffiles"], capture_output=True, text=True,
                               check=True).stdout
    assert conffiles.strip() == "/etc/nvidia-container-runtime/config.toml"
    lib = flat(repo) / f"libnvidia-container1_1.14.3-1_{bar.native_arch()}.deb"
    listing = subprocess.run(["dpkg-deb", "-c", str(lib)], capture_output=True, text=True, check=True).stdout
    assert "libnvidia-container.so.1 -> libnvidia-container.so.1.14.3" in listing


def test_the_standin_ctk_reports_the_version(repo, tmp_path):
    base = flat(repo) / f"nvidia-container-toolkit-base_1.14.3-1_{bar.native_arch()}.deb"
    subprocess.run(["dpkg-deb", "-x", str(base), str(tmp_path)], check=True)
    out = subprocess.run([str(tmp_path / "usr/bin/nvidia-ctk"), "--version"], capture_output=True, text=True,
                         check=True).stdout
    assert out.splitlines()[0] == "NVIDIA Container Toolkit CLI version 1.14.3"


def test_rebuilt_only_when_the_spec_changes(tmp_path, capsys):
    spec = tmp_path / "spec.yml"
    spec.write_text(
        "repositories:\n"
        "  - name: demo\n"
        "    path: demo/{arch}\n"
        "    packages:\n"
        "      - {name: lockstep-demo, version: 1.0-1, architecture: all, description: Demo}\n"
    )
    out = tmp_path / "out"
    assert bar.main(["--spec", str(spec), "--out", str(out)]) == 0
    key = (out / "lockstep-standin.gpg").read_bytes()
    assert bar.main(["--spec", str(spec), "--out", str(out)]) == 0
    assert "up to date" in capsys.readouterr().out
    assert (out / "lockstep-standin.gpg").read_bytes() == key
    spec.write_text(spec.read_text().replace("1.0-1", "1.0-2"))
    assert bar.main(["--spec", str(spec), "--out", str(out)]) == 0
    assert "Version: 1.0-2" in (out / "demo" / bar.native_arch() / "Packages").read_text()
    # A new build signs with a new throwaway key.
    assert (out / "lockstep-standin.gpg").read_bytes() != key


@pytest.mark.parametrize("package, words", [
    ("{name: x1, version: 1.0-1}", "package x1: 'description' is required"),
    ("{name: x1, version: one, description: d}", "'version' must be a Debian version"),
    ("{name: x1, version: 1.0-1, description: d, files: [{path: usr/bin/x, content: y}]}", "absolute 'path'"),
    ("{name: x1, version: 1.0-1, description: d, depends: libc6}", "'depends' must be a list"),
    ("{name: x1, version: 1.0-1, description: d, files: [{path: /x, src: no/such/file}]}",
     "package x1: cannot read src no/such/file"),
])
def test_spec_errors_name_the_package_and_field(tmp_path, capsys, package, words):
    spec = tmp_path / "spec.yml"
    spec.write_text(f"repositories:\n  - name: r\n    path: r\n    packages:\n      - {package}\n")
    assert bar.main(["--spec", str(spec), "--out", str(tmp_path / "out")]) == 2
    assert words in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def _write(path: Path, text: str) -> Path:
    path.write_text(textwrap.dedent(text))
    return path


def test_specs_naming_one_repository_are_merged(tmp_path):
    a = _write(tmp_path / "a.yml", """\
        repositories:
          - {name: cuda, path: cuda/x86_64, stands_in_for: https://example.invalid/cuda,
             packages: [{name: cuda-toolkit-12-1, version: 12.1.1-1, description: toolkit}]}
        """)
    b = _write(tmp_path / "b.yml", """\
        repositories:
          - {name: cuda, path: cuda/x86_64,
             packages: [{name: libnccl2, version: 2.18.3-1+cuda12.1, description: nccl}]}
        """)
    spec = bar.load_spec([a, b])
    assert [r["name"] for r in spec["repositories"]] == ["cuda"]
    assert [p["name"] for p in spec["repositories"][0]["packages"]] == ["cuda-toolkit-12-1", "libnccl2"]
    c = _write(tmp_path / "c.yml", """\
        repositories:
          - {name: cuda, path: elsewhere, packages: []}
        """)
    with pytest.raises(bar.SpecError, match="repository cuda: path 'elsewhere' differs"):
        bar.load_spec([a, c])
    with pytest.raises(bar.SpecError, match="cuda-toolkit-12-1 12.1.1-1 listed twice"):
        bar.load_spec([a, a])


def _wheel(cache: Path) -> tuple[str, str]:
    cache.mkdir(parents=True, exist_ok=True)
    path = cache / "demo-1.0-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("demo/bin/tool", "#!/bin/sh\necho real\n")
    return path.name, hashlib.sha256(path.read_bytes()).hexdigest()


def test_files_come_from_a_wheel_checked_by_sha256(tmp_path, monkeypatch):
    cache = tmp_path / "wheels"
    filename, sha = _wheel(cache)
    monkeypatch.setattr(bar, "WHEEL_CACHE", cache)
    wheels = {"demo": {"requirement": "demo==1.0", "filename": filename, "sha256": sha}}
    entry = {"path": "/usr/bin/tool", "wheel": "demo", "member": "demo/bin/tool"}
    assert bar._wheel_member(wheels, entry, "pkg") == b"#!/bin/sh\necho real\n"
    with pytest.raises(bar.SpecError, match="demo/bin/other is not in demo-1.0"):
        bar._wheel_member(wheels, dict(entry, member="demo/bin/other"), "pkg")
    bad = {"demo": dict(wheels["demo"], sha256="0" * 64, requirement="lockstep-no-such-wheel==0")}
    monkeypatch.setattr(bar.subprocess, "run", lambda *a, **k: subprocess.CompletedProcess(a, 1, "", "no index"))
    with pytest.raises(bar.SpecError, match="pip download did not produce"):
        bar._wheel_member(bad, entry, "pkg")


def test_a_file_naming_an_undeclared_wheel_is_refused(tmp_path):
    spec = _write(tmp_path / "s.yml", """\
        repositories:
          - name: r
            path: r
            packages:
              - name: pp
                version: 1-1
                description: pp
                files: [{path: /usr/bin/ptxas, wheel: nvcc, member: nvidia/cuda_nvcc/bin/ptxas}]
        """)
    with pytest.raises(bar.SpecError, match="names wheel 'nvcc', which needs an entry under 'wheels'"):
        bar.load_spec([spec])
