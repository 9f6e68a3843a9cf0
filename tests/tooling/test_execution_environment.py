"""ee/execution-environment.yml: ansible-builder (v3) makes a build context for
an AWX / Automation Platform execution environment holding lockstep.gpu.

`ansible-builder create` writes the context only (no container engine, no
registry); building the image is left to sites that can pull the base image.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def test_ansible_builder_creates_a_build_context(tmp_path):
    work = tmp_path / "work"
    shutil.copytree(ROOT / "ee", work / "ee")
    version = yaml.safe_load((ROOT / "galaxy.yml").read_text())["version"]
    subprocess.run([str(BIN / "ansible-galaxy"), "collection", "build", "--output-path", str(work / "ee"), str(ROOT)],
                   check=True, capture_output=True, text=True)
    done = subprocess.run([str(BIN / "ansible-builder"), "create", "-f", "ee/execution-environment.yml", "-c", "context"],
                          cwd=work, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    context = work / "context"
    containerfile = (context / "Containerfile").read_text()
    assert "ansible-core==2.19.14" in containerfile
    assert "ansible-galaxy collection install" in containerfile
    tarball = context / "_build" / "collections" / f"lockstep-gpu-{version}.tar.gz"
    assert tarball.is_file()
    requirements = yaml.safe_load((context / "_build" / "requirements.yml").read_text())
    names = [c["name"] for c in requirements["collections"]]
    # The galaxy stage runs in /build, where _build/ is copied: the path resolves there.
    assert f"collections/lockstep-gpu-{version}.tar.gz" in names
    assert {"ansible.posix", "community.general"} <= set(names)
    assert "openssh" in (context / "_build" / "bindep.txt").read_text()


def test_the_collection_declares_its_own_requirements_for_introspection():
    meta = yaml.safe_load((ROOT / "meta" / "execution-environment.yml").read_text())
    for kind in ("python", "system"):
        assert (ROOT / meta["dependencies"][kind]).is_file()
