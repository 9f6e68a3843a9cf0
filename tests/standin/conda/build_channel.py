#!/usr/bin/env python3
"""TEST STAND-IN: build a local conda channel and a pip wheel directory.

conda-forge and anaconda are unreachable from the test machines, and no
conda package of CPython can be had offline. This script therefore builds,
for the tests only:

* ``python 3.11.2`` (build ``0_lockstep_standin``): NOT a real conda Python.
  It holds ``bin/python`` -> ``/usr/bin/python3.11`` (the node image's own
  Debian CPython 3.11.2) and a ``pyvenv.cfg``, so the interpreter runs with
  the environment as ``sys.prefix`` and uses only the environment's
  ``lib/python3.11/site-packages`` -- the mechanism of a Python venv. It
  works only on nodes with Debian 12's python3.11, i.e. the test nodes.
* ``pip``, ``packaging`` and ``six``: the real PyPI wheels, unpacked into
  conda packages (``lib/python3.11/site-packages``), depending on python.
* ``wheels/``: the real PyPI wheels of ``six`` (two versions), the pip
  package source the tests lock with ``--require-hashes``.

Usage: build_channel.py OUTDIR   (idempotent; PyPI is needed the first time)
Layout: OUTDIR/channel/{linux-64,noarch}/..., OUTDIR/wheels/*.whl
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

from conda_package_handling import api
from rattler.index import index_fs

PY = "3.11"
PY_VERSION = "3.11.2"  # Debian 12's python3.11
CONDA_WHEELS = {"pip": "24.3.1", "packaging": "24.2", "six": "1.17.0"}
PIP_WHEELS = ["six==1.17.0", "six==1.16.0"]


def _package(channel: Path, name: str, version: str, build: str, depends: list[str],
             root: Path) -> bool:
    """Pack root as a conda package; False where the package is already there."""
    out = channel / "linux-64" / f"{name}-{version}-{build}.tar.bz2"
    if out.exists():
        return False
    files = sorted(str(p.relative_to(root)) for p in root.rglob("*")
                   if (p.is_file() or p.is_symlink()) and not str(p.relative_to(root)).startswith("info/"))
    info = root / "info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "index.json").write_text(json.dumps({
        "name": name, "version": version, "build": build, "build_number": 0,
        "depends": depends, "subdir": "linux-64", "arch": "x86_64", "platform": "linux",
        "license": "test-stand-in", "timestamp": int(time.time() * 1000),
    }, indent=1))
    (info / "files").write_text("".join(f"{f}\n" for f in files))
    (info / "about.json").write_text(json.dumps(
        {"summary": "Lockstep TEST STAND-IN built by tests/standin/conda/build_channel.py"}))
    out.parent.mkdir(parents=True, exist_ok=True)
    api.create(str(root), files + ["info/index.json", "info/files", "info/about.json"],
               out.name, out_folder=str(out.parent))
    return True


def build(outdir: Path) -> None:
    channel, wheels = outdir / "channel", outdir / "wheels"
    (channel / "noarch").mkdir(parents=True, exist_ok=True)
    wheels.mkdir(parents=True, exist_ok=True)
    need = [f"{n}=={v}" for n, v in CONDA_WHEELS.items()] + PIP_WHEELS
    have = {p.name.split("-")[0].lower() + "==" + p.name.split("-")[1] for p in wheels.glob("*.whl")}
    if set(need) - have:
        for spec in sorted(set(need) - have):
            subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps",
                            "--only-binary=:all:", "-d", str(wheels), spec], check=True)

    built = False
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "python"
        (root / "bin").mkdir(parents=True)
        (root / f"lib/python{PY}/site-packages").mkdir(parents=True)
        os.symlink(f"/usr/bin/python{PY}", root / "bin/python")
        os.symlink("python", root / f"bin/python{PY}")
        os.symlink("python", root / "bin/python3")
        (root / "pyvenv.cfg").write_text(
            f"home = /usr/bin\ninclude-system-site-packages = false\nversion = {PY_VERSION}\n"
            "# Lockstep TEST STAND-IN: the node's Debian CPython, not a conda Python.\n")
        (root / f"lib/python{PY}/site-packages/lockstep_standin_python.txt").write_text(
            "TEST STAND-IN python package: bin/python is the node's /usr/bin/python3.11.\n")
        built |= _package(channel, "python", PY_VERSION, "0_lockstep_standin", [], root)

        for name, version in CONDA_WHEELS.items():
            wheel = next(wheels.glob(f"{name}-{version}-*.whl"))
            root = Path(tmp) / name
            site = root / f"lib/python{PY}/site-packages"
            site.mkdir(parents=True)
            with zipfile.ZipFile(wheel) as zf:
                zf.extractall(site)
            for dist in site.glob("*.dist-info"):
                (dist / "INSTALLER").write_text("conda\n")
            built |= _package(channel, name, version, "py311_0", [f"python {PY}.*"], root)

    if built or not (channel / "linux-64" / "repodata.json").exists():
        asyncio.run(index_fs(channel, force=True))
        shutil.rmtree(channel / ".cache", ignore_errors=True)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    build(Path(sys.argv[1]).resolve())
    print(Path(sys.argv[1]).resolve(), flush=True)
    sys.stderr.flush()
    # py-rattler 0.28's indexer leaves Rust (tokio) worker threads that call
    # back into Python while the interpreter finalizes: about one run in
    # fifteen then dies with "PyGILState_Release ... finalizing", SIGSEGV or
    # SIGABRT after the channel is complete (seen in CI, reproduced 3 in 40
    # here). The work is done and flushed; leave without finalizing.
    os._exit(0)
