#!/usr/bin/env python3
"""Build Lockstep's local, signed TEST STAND-IN apt repositories.

NVIDIA's repositories (libnvidia-container, CUDA, ...) cannot be reached from
the machines Lockstep is tested on, so the tests serve the nodes a local
repository instead: packages with NVIDIA's names, versions and dependency
structure, built here from YAML specs (every ``tests/standin/*.yml``, read in name
order; a repository named in several files gets the packages of all).
They are NOT NVIDIA's packages; every one says so in its description.
Where NVIDIA publishes the real files as wheels on PyPI (ptxas, libcudart,
libnccl, nccl.h), a package carries those real files: a spec's ``wheels``
names the wheel with its sha256, pip downloads it once into
``.cache/standin-wheels/`` (through pip's configured index, so a PyPI mirror
works) and the file entry names the member to take from it.

    python3 tests/standin/build_apt_repo.py [--spec FILE ...] [--out DIR] [--force]

Output (default ``.cache/standin-apt/`` under the repository root)::

    lockstep-standin.gpg    public keyring (binary) for Signed-By
    lockstep-standin.asc    the same key, ASCII-armoured
    lockstep-standin.fpr    its fingerprint (for roles that pin the key's fingerprint)
    <repo path>/            one flat repository per spec entry, laid out like
                            the real one (e.g. libnvidia-container/stable/deb/amd64):
                            *.deb, Packages, Packages.gz, Release, InRelease, Release.gpg
    .stamp                  hash of the inputs; the build is skipped while it matches

Every build signs with a new throwaway key whose secret half is deleted
with the temporary GnuPG home at the end of the build, so nothing can ever
be signed with it again. Apt sees a repository signed like the real one and
checks it with ``Signed-By`` (never ``trusted=yes``).

Needs: ``dpkg-deb`` (package dpkg) and ``gpg`` with ``gpg-agent`` (package
gnupg) on the machine that builds; Packages and Release are written here,
so apt-utils is not needed.
"""

from __future__ import annotations

import argparse
import datetime as dt
import gzip
import hashlib
import io
import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
import zipfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
SPEC_DIR = ROOT / "tests" / "standin"
DEFAULT_OUT = ROOT / ".cache" / "standin-apt"
WHEEL_CACHE = ROOT / ".cache" / "standin-wheels"
# Packages whose contents exceed this are compressed fast (gzip -1): real
# libraries from NVIDIA's wheels are hundreds of MB and the repository is
# rebuilt whenever a spec changes.
BIG_PACKAGE = 32 * 1024 * 1024
MAINTAINER = "Lockstep test stand-ins <standin@lockstep.invalid>"
KEY_UID = "Lockstep TEST STAND-IN repository (throwaway key, new per build) <standin@lockstep.invalid>"
NOTICE = (
    "Lockstep TEST STAND-IN: built by tests/standin/build_apt_repo.py so that tests "
    "can run without {vendor}'s servers. It is not {vendor}'s package and does not "
    "do what the real one does."
)
MULTIARCH = {
    "amd64": "x86_64-linux-gnu",
    "arm64": "aarch64-linux-gnu",
    "ppc64el": "powerpc64le-linux-gnu",
    "s390x": "s390x-linux-gnu",
    "i386": "i386-linux-gnu",
}
PACKAGE_NAME = re.compile(r"^[a-z0-9][a-z0-9+.-]+$")
DEB_VERSION = re.compile(r"^(\d+:)?[0-9][A-Za-z0-9.+~-]*$")
# Control fields in the order dpkg and apt-ftparchive write them.
FIELD_ORDER = [
    "Package", "Source", "Version", "Architecture", "Maintainer", "Installed-Size",
    "Pre-Depends", "Depends", "Recommends", "Suggests", "Conflicts", "Breaks",
    "Replaces", "Provides", "Section", "Priority", "Multi-Arch", "Homepage",
    "Description",
]
LIST_FIELDS = {
    "pre_depends": "Pre-Depends", "depends": "Depends", "recommends": "Recommends",
    "suggests": "Suggests", "conflicts": "Conflicts", "breaks": "Breaks",
    "replaces": "Replaces", "provides": "Provides",
}


class SpecError(Exception):
    """The YAML spec is wrong; the message names the package and field."""


def _need(tool: str, package: str) -> None:
    if shutil.which(tool) is None:
        sys.exit(f"build_apt_repo: '{tool}' not found; install the Debian package '{package}' "
                 f"(apt-get install {package}).")


def native_arch() -> str:
    return subprocess.run(["dpkg", "--print-architecture"], check=True,
                          capture_output=True, text=True).stdout.strip()


def default_specs() -> list[Path]:
    return sorted(SPEC_DIR.glob("*.yml"))


def _load_one(path: Path) -> dict:
    try:
        spec = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise SpecError(f"{path}: {exc}") from None
    if not isinstance(spec, dict) or not isinstance(spec.get("repositories"), list):
        raise SpecError(f"{path}: expected a mapping with a list 'repositories'")
    if not isinstance(spec.get("wheels", {}), dict):
        raise SpecError(f"{path}: 'wheels' must be a mapping of names to wheels")
    return spec


def load_spec(paths) -> dict:
    """Read and merge the spec files; repositories with one name are merged."""
    paths = [paths] if isinstance(paths, Path) else list(paths)
    if not paths:
        raise SpecError("no spec files given")
    merged: dict = {"vendor": None, "keyring": None, "wheels": {}, "repositories": []}
    by_name: dict = {}
    for path in paths:
        spec = _load_one(path)
        for key in ("vendor", "keyring"):
            if spec.get(key) is not None:
                if merged[key] not in (None, spec[key]):
                    raise SpecError(f"{path}: {key} {spec[key]!r} differs from {merged[key]!r} of another spec")
                merged[key] = spec[key]
        for wname, wheel in spec.get("wheels", {}).items():
            if not isinstance(wheel, dict) or not all(isinstance(wheel.get(k), str)
                                                      for k in ("requirement", "filename", "sha256")):
                raise SpecError(f"{path}: wheel {wname} needs requirement, filename and sha256")
            if not re.fullmatch(r"[0-9a-f]{64}", wheel["sha256"]):
                raise SpecError(f"{path}: wheel {wname}: sha256 must be 64 hex digits")
            if merged["wheels"].get(wname, wheel) != wheel:
                raise SpecError(f"{path}: wheel {wname} is declared differently in another spec")
            merged["wheels"][wname] = wheel
        for repo in spec["repositories"]:
            name = repo.get("name") if isinstance(repo, dict) else None
            if not name or not isinstance(repo.get("packages"), list):
                raise SpecError(f"{path}: every repository needs a name and a list of packages ({repo!r})")
            if name in by_name:
                first = by_name[name]
                for key, value in repo.items():
                    if key != "packages" and first.get(key, value) != value:
                        raise SpecError(f"{path}: repository {name}: {key} {value!r} differs from "
                                        f"{first.get(key)!r} given in another spec")
                first["packages"].extend(repo["packages"])
            else:
                by_name[name] = dict(repo, packages=list(repo["packages"]))
                merged["repositories"].append(by_name[name])
    merged["vendor"] = merged["vendor"] or "NVIDIA"
    merged["keyring"] = merged["keyring"] or "lockstep-standin"
    seen_paths = set()
    for repo in merged["repositories"]:
        name = repo["name"]
        if not isinstance(repo.get("path"), str):
            raise SpecError(f"repository {name}: 'path' is required")
        if repo["path"].startswith("/") or ".." in repo["path"].split("/"):
            raise SpecError(f"repository {name}: path must be relative and stay inside the output")
        if repo["path"] in seen_paths:
            raise SpecError(f"repository {name}: path {repo['path']} used twice")
        seen_paths.add(repo["path"])
        seen_pkgs = set()
        for pkg in repo["packages"]:
            _check_package(name, pkg, merged["wheels"])
            if (pkg["name"], str(pkg["version"])) in seen_pkgs:
                raise SpecError(f"repository {name}: package {pkg['name']} {pkg['version']} listed twice")
            seen_pkgs.add((pkg["name"], str(pkg["version"])))
    return merged


def fetch_wheel(wheel: dict, cache: Path | None = None) -> Path:
    """The wheel file, downloaded once with pip and checked against its sha256."""
    cache = cache or WHEEL_CACHE
    target = cache / wheel["filename"]
    if target.is_file() and hashlib.sha256(target.read_bytes()).hexdigest() == wheel["sha256"]:
        return target
    cache.mkdir(parents=True, exist_ok=True)
    result = subprocess.run(
        [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:",
         "--dest", str(cache), wheel["requirement"]], capture_output=True, text=True, check=False)
    if result.returncode != 0 or not target.is_file():
        raise SpecError(f"wheel {wheel['requirement']}: pip download did not produce {wheel['filename']} "
                        f"(is PyPI or its mirror reachable?): {result.stderr.strip()[-400:]}")
    actual = hashlib.sha256(target.read_bytes()).hexdigest()
    if actual != wheel["sha256"]:
        target.unlink()
        raise SpecError(f"wheel {wheel['filename']}: sha256 {actual} does not match the spec's {wheel['sha256']}")
    return target


def _wheel_member(wheels: dict, entry: dict, pkg_name: str) -> bytes:
    path = fetch_wheel(wheels[entry["wheel"]])
    with zipfile.ZipFile(path) as archive:
        try:
            return archive.read(entry["member"])
        except KeyError:
            raise SpecError(f"package {pkg_name}: {entry['member']} is not in {path.name}") from None


def _check_package(repo: str, pkg, wheels: dict) -> None:
    if not isinstance(pkg, dict):
        raise SpecError(f"repository {repo}: package entries are mappings, got {pkg!r}")
    name = pkg.get("name", "")
    where = f"repository {repo}, package {name or '?'}"
    if not PACKAGE_NAME.match(str(name)):
        raise SpecError(f"{where}: 'name' must be a Debian package name")
    if not DEB_VERSION.match(str(pkg.get("version", ""))):
        raise SpecError(f"{where}: 'version' must be a Debian version like 1.14.3-1, got {pkg.get('version')!r}")
    if not isinstance(pkg.get("description"), str) or not pkg["description"].strip():
        raise SpecError(f"{where}: 'description' is required")
    for key in LIST_FIELDS:
        if key in pkg and not (isinstance(pkg[key], list) and all(isinstance(d, str) for d in pkg[key])):
            raise SpecError(f"{where}: '{key}' must be a list of strings")
    for entry in pkg.get("files", []) or []:
        kinds = [k for k in ("content", "src", "link", "wheel") if k in entry] if isinstance(entry, dict) else []
        if not isinstance(entry, dict) or not str(entry.get("path", "")).startswith("/") or len(kinds) != 1:
            raise SpecError(f"{where}: each file needs an absolute 'path' and exactly one of "
                            f"content, src, link, wheel ({entry!r})")
        if "wheel" in entry and (entry["wheel"] not in wheels or not isinstance(entry.get("member"), str)):
            raise SpecError(f"{where}: file {entry['path']} names wheel {entry['wheel']!r}, which needs an entry "
                            f"under 'wheels' and a 'member' path inside it")


def _subst(text: str, values: dict) -> str:
    for key, value in values.items():
        text = text.replace("{" + key + "}", value)
    return text


def _control_text(fields: dict) -> str:
    lines = []
    for key in FIELD_ORDER + sorted(set(fields) - set(FIELD_ORDER)):
        if key in fields and fields[key] not in (None, ""):
            lines.append(f"{key}: {fields[key]}")
    return "\n".join(lines) + "\n"


def _description(pkg: dict, vendor: str) -> str:
    summary, _, body = pkg["description"].strip().partition("\n")
    paragraphs = [p.strip() for p in body.strip().split("\n\n") if p.strip()]
    paragraphs.append(textwrap.fill(NOTICE.format(vendor=vendor), 72))
    out = [f"{summary.strip()} (Lockstep TEST STAND-IN)"]
    for i, para in enumerate(paragraphs):
        if i:
            out.append(" .")
        out.extend(" " + line.strip() for line in para.splitlines())
    return "\n".join(out)


def build_deb(pkg: dict, arch: str, vendor: str, stage: Path, dest_dir: Path,
              wheels: dict | None = None) -> Path:
    """Build one .deb from its spec entry; returns its path."""
    architecture = pkg.get("architecture", "native")
    architecture = arch if architecture == "native" else architecture
    version = str(pkg["version"])
    upstream = version.split(":", 1)[-1].rsplit("-", 1)[0]
    values = {"arch": arch, "multiarch": MULTIARCH.get(arch, f"{arch}-linux-gnu"),
              "name": pkg["name"], "version": version, "upstream_version": upstream}
    root = stage / f"{pkg['name']}_{version}"
    (root / "DEBIAN").mkdir(parents=True)
    conffiles, md5sums, size = [], [], 0
    for entry in pkg.get("files", []) or []:
        target = root / _subst(entry["path"], values).lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        if "link" in entry:
            target.symlink_to(_subst(entry["link"], values))
            continue
        if "wheel" in entry:
            data = _wheel_member(wheels or {}, entry, pkg["name"])
        elif "src" in entry:
            try:
                data = (ROOT / entry["src"]).read_bytes()
            except OSError as exc:
                raise SpecError(f"package {pkg['name']}: cannot read src {entry['src']}: {exc.strerror}") from None
        else:
            data = _subst(entry["content"], values).encode()
        target.write_bytes(data)
        os.chmod(target, int(str(entry.get("mode", "0644")), 8))
        rel = target.relative_to(root).as_posix()
        md5sums.append(f"{hashlib.md5(data).hexdigest()}  {rel}")  # noqa: S324 - dpkg's format
        size += len(data)
        if rel.startswith("etc/"):
            conffiles.append("/" + rel)
    fields = {
        "Package": pkg["name"],
        "Version": version,
        "Architecture": architecture,
        "Maintainer": MAINTAINER,
        "Installed-Size": str(max(1, (size + 1023) // 1024)),
        "Section": pkg.get("section", "utils"),
        "Priority": pkg.get("priority", "optional"),
        "Homepage": pkg.get("homepage", ""),
        "Multi-Arch": pkg.get("multi_arch", ""),
        "Description": _description(pkg, vendor),
    }
    for key, field in LIST_FIELDS.items():
        if pkg.get(key):
            fields[field] = ", ".join(_subst(d, values) for d in pkg[key])
    (root / "DEBIAN" / "control").write_text(_control_text(fields))
    if md5sums:
        (root / "DEBIAN" / "md5sums").write_text("\n".join(md5sums) + "\n")
    if conffiles:
        (root / "DEBIAN" / "conffiles").write_text("\n".join(conffiles) + "\n")
    for script, body in (pkg.get("scripts") or {}).items():
        if script not in ("preinst", "postinst", "prerm", "postrm"):
            raise SpecError(f"package {pkg['name']}: unknown maintainer script {script}")
        path = root / "DEBIAN" / script
        path.write_text(_subst(body, values))
        path.chmod(0o755)
    deb = dest_dir / f"{pkg['name']}_{version.split(':', 1)[-1]}_{architecture}.deb"
    level = ["-z1"] if size > BIG_PACKAGE else []
    subprocess.run(["dpkg-deb", "--root-owner-group", "-Zgzip", *level, "--build", str(root), str(deb)],
                   check=True, capture_output=True)
    return deb


def packages_index(debs: list[Path], repo_dir: Path) -> str:
    """The Packages file of a flat repository (apt-ftparchive's format)."""
    stanzas = []
    for deb in sorted(debs):
        control = subprocess.run(["dpkg-deb", "-f", str(deb)], check=True,
                                 capture_output=True, text=True).stdout.rstrip("\n")
        data = deb.read_bytes()
        control += (
            f"\nFilename: ./{deb.relative_to(repo_dir).as_posix()}"
            f"\nSize: {len(data)}"
            f"\nMD5sum: {hashlib.md5(data).hexdigest()}"  # noqa: S324 - apt's format
            f"\nSHA1: {hashlib.sha1(data).hexdigest()}"  # noqa: S324 - apt's format
            f"\nSHA256: {hashlib.sha256(data).hexdigest()}"
        )
        stanzas.append(control)
    return "\n\n".join(stanzas) + "\n"


def release_file(repo: dict, arch: str, index_files: dict[str, bytes], now: dt.datetime) -> str:
    lines = [
        f"Origin: {repo.get('origin', 'Lockstep test stand-in')}",
        f"Label: {repo.get('label', repo['name'] + ' (Lockstep TEST STAND-IN)')}",
        f"Architectures: {arch} all",
        f"Date: {now.strftime('%a, %d %b %Y %H:%M:%S UTC')}",
        f"Description: Lockstep TEST STAND-IN for {repo.get('stands_in_for', repo['name'])}; not the vendor's repository",
    ]
    for field, algo in (("MD5Sum", "md5"), ("SHA1", "sha1"), ("SHA256", "sha256")):
        lines.append(f"{field}:")
        for name, data in sorted(index_files.items()):
            lines.append(f" {hashlib.new(algo, data).hexdigest()} {len(data):>8} {name}")
    return "\n".join(lines) + "\n"


def _gpg(home: Path, *args: str, stdin: bytes | None = None) -> bytes:
    env = dict(os.environ, GNUPGHOME=str(home), LC_ALL="C")
    result = subprocess.run(["gpg", "--batch", "--no-tty", "--quiet", *args], input=stdin,
                            env=env, capture_output=True, check=False)
    if result.returncode != 0:
        raise RuntimeError(f"gpg {' '.join(args)} failed: {result.stderr.decode(errors='replace')}")
    return result.stdout


def build(spec_paths: list[Path], out: Path) -> None:
    spec = load_spec(spec_paths)
    arch = native_arch()
    vendor = spec.get("vendor", "NVIDIA")
    now = dt.datetime.now(dt.timezone.utc)
    out.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".standin-build.", dir=out.parent))
    new = work / "repo"
    # gpg-agent's socket lives in GNUPGHOME: keep its path short.
    home = Path(tempfile.mkdtemp(prefix="lockstep-gpg."))
    try:
        new.mkdir()
        _gpg(home, "--pinentry-mode", "loopback", "--passphrase", "",
             "--quick-gen-key", KEY_UID, "ed25519", "sign", "never")
        keyring = spec.get("keyring", "lockstep-standin")
        (new / f"{keyring}.gpg").write_bytes(_gpg(home, "--export"))
        (new / f"{keyring}.asc").write_bytes(_gpg(home, "--armor", "--export"))
        colons = _gpg(home, "--with-colons", "--list-keys").decode()
        fingerprint = next(line.split(":")[9] for line in colons.splitlines() if line.startswith("fpr:"))
        (new / f"{keyring}.fpr").write_text(fingerprint + "\n")
        for repo in spec["repositories"]:
            repo_dir = new / _subst(repo["path"], {"arch": arch})
            repo_dir.mkdir(parents=True)
            stage = work / "stage" / repo["name"]
            debs = [build_deb(p, arch, repo.get("vendor", vendor), stage, repo_dir, spec["wheels"])
                    for p in repo["packages"]]
            packages = packages_index(debs, repo_dir).encode()
            buf = io.BytesIO()
            with gzip.GzipFile(fileobj=buf, mode="wb", mtime=0) as gz:
                gz.write(packages)
            index = {"Packages": packages, "Packages.gz": buf.getvalue()}
            for name, data in index.items():
                (repo_dir / name).write_bytes(data)
            release = release_file(repo, arch, index, now).encode()
            (repo_dir / "Release").write_bytes(release)
            (repo_dir / "InRelease").write_bytes(_gpg(home, "--clearsign", "--digest-algo", "SHA256", stdin=release))
            (repo_dir / "Release.gpg").write_bytes(_gpg(home, "--armor", "--detach-sign", "--digest-algo", "SHA256", stdin=release))
        (new / "README").write_text(
            "Lockstep TEST STAND-IN apt repositories, built by tests/standin/build_apt_repo.py\n"
            f"from {', '.join(p.name for p in spec_paths)} on {now.isoformat(timespec='seconds')}. Not NVIDIA's packages.\n"
            f"Signed with a throwaway key whose secret half no longer exists ({keyring}.gpg).\n")
        (new / ".stamp").write_text(inputs_hash(spec_paths, spec, arch) + "\n")
        for path in [new, *new.rglob("*")]:
            if not path.is_symlink():
                path.chmod(0o755 if path.is_dir() else 0o644)
        # Swap the contents, not the directory: nodes that bind-mount the
        # output directory see the new build without being recreated.
        old = work / "old"
        old.mkdir()
        out.mkdir(mode=0o755, exist_ok=True)
        for child in list(out.iterdir()):
            child.rename(old / child.name)
        for child in list(new.iterdir()):
            child.rename(out / child.name)
    finally:
        subprocess.run(["gpgconf", "--kill", "gpg-agent"], env=dict(os.environ, GNUPGHOME=str(home)),
                       capture_output=True, check=False)
        shutil.rmtree(home, ignore_errors=True)
        shutil.rmtree(work, ignore_errors=True)


def inputs_hash(spec_paths: list[Path], spec: dict, arch: str) -> str:
    digest = hashlib.sha256()
    digest.update(Path(__file__).read_bytes())
    for path in spec_paths:
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    digest.update(arch.encode())
    for repo in spec["repositories"]:
        for pkg in repo["packages"]:
            for entry in pkg.get("files", []) or []:
                if "src" in entry:
                    digest.update((ROOT / entry["src"]).read_bytes())
    return digest.hexdigest()


def up_to_date(spec_paths: list[Path], out: Path) -> bool:
    stamp = out / ".stamp"
    if not stamp.is_file():
        return False
    try:
        spec = load_spec(spec_paths)
        return stamp.read_text().strip() == inputs_hash(spec_paths, spec, native_arch())
    except (SpecError, OSError):
        return False


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spec", type=Path, action="append",
                        help="YAML spec; repeat for several (default: every tests/standin/*.yml)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output directory (default: %(default)s)")
    parser.add_argument("--force", action="store_true", help="rebuild even if the spec is unchanged")
    args = parser.parse_args(argv)
    _need("dpkg-deb", "dpkg")
    _need("gpg", "gnupg")
    _need("gpg-agent", "gpg-agent")
    spec_paths = [p.resolve() for p in (args.spec or default_specs())]
    out = args.out.resolve()
    if not args.force and up_to_date(spec_paths, out):
        print(f"stand-in apt repository {out} is up to date")
        return 0
    try:
        build(spec_paths, out)
    except SpecError as exc:
        print(f"build_apt_repo: {exc}", file=sys.stderr)
        return 2
    print(f"built stand-in apt repository {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
