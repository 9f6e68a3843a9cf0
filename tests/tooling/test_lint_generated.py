"""The lint stage passes on a tree where the demo's outputs exist.

`scripts/demo` writes files git ignores (inventories/demo/conda-lock.yml,
verify.yml's reports and history, collect_bundles.yml's bundles, the conda
cluster cache, the GPUStack wheelhouse and stand-in repositories in .cache/);
`scripts/test lint` runs `yamllint -s .` and `ansible-lint -q` right after, in
the same clone. Both must look past everything the project generates, and
.gitignore is the list of it: yamllint reads it (ignore-from-file), and
ansible-lint's exclude_paths must repeat it (ansible-lint applies .gitignore
to the top directory's files only).

The tree: this clone's lint configuration (.yamllint, .ansible-lint,
.gitignore, galaxy.yml and CHANGELOG.md, meta/, ansible.cfg) and its inventories, plus
  - the demo's outputs, realistic, with the demo's lock written as
    scripts/conda-lock wrote it before it indented its lists (yamllint:
    "wrong indentation: expected 8 but found 6");
  - in a place matching each pattern of .gitignore, a YAML file that breaks
    yamllint's and ansible-lint's rules, so that a pattern one of the tools
    does not honour fails here.
A lock that a cluster keeps in its own inventory is not ignored: the text
scripts/conda-lock writes must pass both tools (test_a_clusters_own_lock...).
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import limits
import pytest
import yaml
from yamllint import linter
from yamllint.config import YamlLintConfig

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
CPU_S = 600

# A lock of the demo's environment `train`, shaped as scripts/conda-lock writes it.
LOCK = {
    "format": 2,
    "environments": {"train": {
        "declared": {"name": "train", "python": "3.11", "packages": ["pip"],
                     "pip": ["torch==2.1.2", "deepspeed==0.12.6", "numpy==1.26.4"]},
        "python": "3.11",
        "channels": ["file:///var/tmp/lockstep-conda-standin"],
        "platform": "linux-64",
        "conda": [{"name": "python", "version": "3.11.2", "build": "lockstep_0", "build_number": 0,
                   "subdir": "linux-64", "fn": "python-3.11.2-lockstep_0.conda",
                   "url": "file:///var/tmp/lockstep-conda-standin/linux-64/python-3.11.2-lockstep_0.conda",
                   "channel": "file:///var/tmp/lockstep-conda-standin", "sha256": "3" * 64,
                   "depends": ["pip", "six >=1.16"]}],
        "pip": {"index_url": "https://pypi.org/simple", "find_links": "", "packages": [
            {"name": "deepspeed", "version": "0.12.6", "filename": "deepspeed-0.12.6-py3-none-any.whl",
             "sha256": "d" * 64, "sdist": {"filename": "deepspeed-0.12.6.tar.gz", "sha256": "e" * 64}},
            {"name": "torch", "version": "2.1.2", "filename": "torch-2.1.2-cp311-cp311-manylinux1_x86_64.whl",
             "sha256": "a" * 64}]},
        "sha256": "f" * 64}},
    "installer": {"name": "py-rattler", "version": "0.28.0",
                  "filename": "py_rattler-0.28.0-cp38-abi3-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
                  "sha256": "b" * 64, "python": "3.11", "platform": "linux-64",
                  "index_url": "https://pypi.org/simple", "find_links": ""},
}
# The demo's lock as scripts/conda-lock wrote it until its lists were indented.
OLD_LOCK = ("# Written by scripts/conda-lock from the inventory's conda_environments.\n"
            "# Do not edit: change the declaration and run scripts/conda-lock again.\n---\n"
            + yaml.safe_dump(LOCK, sort_keys=False, default_flow_style=False, width=1000))
# Breaks yamllint's default rules and ansible-lint's yaml rule (indentation, truthy, key-duplicates).
BROKEN = "---\nkey:\n- yes\n- [ a,b ]\nkey: 1\n"
REPORT = {"hosts": ["dp1", "dp2", "dp3"], "drifts": [], "by_component": {
    "os.release": {"values": [{"value": "Debian 12", "hosts": ["dp1", "dp2", "dp3"]}]}}}
DEMO_OUTPUTS = {
    "inventories/demo/conda-lock.yml": OLD_LOCK,
    "inventories/demo/reports/drift.json": json.dumps(REPORT, indent=2),
    "inventories/demo/reports/drift.md": "# Drift report\n\n3 hosts agree on 39 components.\n",
    "inventories/demo/reports/drift.html": "<!doctype html><title>Drift report</title>\n",
    "inventories/demo/reports/history/20250101T000000.000000Z.json": json.dumps(REPORT),
    "inventories/demo/bundles/dp1/dpkg-query.txt": "ii libnccl2 2.18.3-1+cuda12.1\n",
    "inventories/demo/bundles/dp1/collect-errors.json": "{}\n",
    "inventories/demo/.conda-cache/pip/torch-2.1.2-cp311-cp311-manylinux1_x86_64.whl": "PK\x03\x04",
    "inventories/demo/.conda-cache/python-3.11.2-lockstep_0.conda": "PK\x03\x04",
    ".cache/gpustack-wheels/.requirements": "gpustack==2.3.0\n",
    ".cache/standin-apt/dists/stable/Release": "Origin: Lockstep stand-in\n",
    ".cache/ansible-facts/dp1": "{}\n",
    ".cache/molecule-logs/cluster.log": "PLAY RECAP\n",
    ".cache/unit.log": "passed\n",
    "reports/drift.json": json.dumps(REPORT),
    "bundles/node1/dpkg-query.txt": "ii libnccl2 2.18.3-1+cuda12.1\n",
}


def _tool(name: str) -> str:
    path = BIN / name
    return str(path) if path.exists() else (shutil.which(name) or name)


def _gitignore() -> list[str]:
    lines = (ROOT / ".gitignore").read_text().splitlines()
    return [line for line in lines if line.strip() and not line.startswith("#")]


def _probe(pattern: str) -> str:
    """A path that ``pattern`` of .gitignore matches, for a YAML file.

    Patterns without a leading slash match at any depth: the probe goes into
    inventories/demo/, where the demo writes (.conda-cache/). A pattern whose
    last part has an extension names files, any other one folders.
    """
    path = pattern.replace("*", "demo")
    path = path[1:] if path.startswith("/") else "inventories/demo/" + path
    last = path.rstrip("/").rsplit("/", 1)[-1]
    if path.endswith("/") or "." not in last.lstrip("."):
        return path.rstrip("/") + "/lint-probe.yml"
    return path


def _errors(text: str) -> list:
    """yamllint's problems in ``text`` under the project's rules (.yamllint less its ignore)."""
    conf = yaml.safe_load((ROOT / ".yamllint").read_text())
    conf.pop("ignore-from-file", None)
    conf.pop("ignore", None)
    return list(linter.run(text, YamlLintConfig(yaml.safe_dump(conf))))


@pytest.fixture
def tree(tmp_path):
    """This clone's lint configuration and inventories, in a temporary directory."""
    files = subprocess.run(["git", "ls-files", "-z", "--", ".yamllint", ".ansible-lint", ".ansible-lint-ignore",
                            ".gitignore", "galaxy.yml", "CHANGELOG.md", "ansible.cfg", "meta", "inventories"],
                           cwd=ROOT, capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, files):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, tmp_path / name)
    return tmp_path


def _lint(tree: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    env.update(NO_COLOR="1", PATH=f"{BIN}{os.pathsep}{env.get('PATH', '')}")
    for cmd in ([_tool("yamllint"), "-s", "."], [_tool("ansible-lint"), "-q", "--nocolor"]):
        proc = limits.run(cmd, cwd=tree, env=env, capture_output=True, text=True, cpu_s=CPU_S)
        assert proc.returncode == 0, f"{' '.join(cmd[:1])} {' '.join(cmd[1:])}:\n{proc.stdout}{proc.stderr}"


def test_generated_files_are_what_git_ignores(tmp_path):
    """Every output of the demo is ignored by git: .gitignore is the list lint reads.

    Asked of git in an empty repository with this clone's .gitignore (in the
    clone itself .venv may be a link, which git check-ignore stops at).
    """
    paths = [*DEMO_OUTPUTS, *(_probe(p) for p in _gitignore())]
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    shutil.copy(ROOT / ".gitignore", tmp_path / ".gitignore")
    proc = subprocess.run(["git", "check-ignore", "--no-index", "--stdin"], cwd=tmp_path,
                          input="\n".join(paths) + "\n", capture_output=True, text=True, check=False)
    assert proc.stderr == ""
    assert sorted(set(paths) - set(proc.stdout.splitlines())) == []


def test_lint_stage_passes_beside_the_demos_outputs(tree):
    assert _errors(OLD_LOCK) and _errors(BROKEN)  # what the tools must not read would fail them
    for path, text in DEMO_OUTPUTS.items():
        (tree / path).parent.mkdir(parents=True, exist_ok=True)
        (tree / path).write_text(text)
    probes = {_probe(p) for p in _gitignore()}
    assert {"inventories/demo/conda-lock.yml", "inventories/demo/.conda-cache/lint-probe.yml",
            "inventories/demo/reports/lint-probe.yml", ".cache/lint-probe.yml"} <= probes | set(DEMO_OUTPUTS)
    for path in probes - set(DEMO_OUTPUTS):
        (tree / path).parent.mkdir(parents=True, exist_ok=True)
        (tree / path).write_text(BROKEN)
    _lint(tree)


def test_a_clusters_own_lock_passes_lint(tree):
    """A lock in a cluster's own inventory is committed, not ignored: scripts/conda-lock writes it lint-clean."""
    loader = importlib.machinery.SourceFileLoader("lockstep_conda_lock", str(ROOT / "scripts" / "conda-lock"))
    spec = importlib.util.spec_from_loader(loader.name, loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    text = module.lock_text(LOCK)
    assert yaml.safe_load(text) == LOCK
    assert _errors(text) == []
    (tree / "inventories/mycluster").mkdir()
    (tree / "inventories/mycluster/conda-lock.yml").write_text(text)
    _lint(tree)
