"""playbooks/train_check.yml on the conda scenario's three nodes (cd1 the head).

The environment ``train`` (/opt/conda/envs/train, torch 2.1.2) is on every
node. The job passes with world size 3 and the sum 6; with torch broken on
cd2 it fails naming cd2 first, and cd2 is put back after. About 2 minutes on
the 2-core CI machine (two jobs, the second with a 20 s rendezvous timeout).
"""

from __future__ import annotations

import re

from conftest import ansible_playbook, node

TORCH = "/opt/conda/envs/train/lib/python3.11/site-packages/torch"
NODES = ("cd1", "cd2", "cd3")


def test_job_passes_on_every_node():
    result = ansible_playbook("playbooks/train_check.yml")
    assert result.returncode == 0, result.output[-3000:]
    assert "train_check world_size=3 backend=gloo sum=6 expected=6" in result.output
    for rank, name in enumerate(NODES):
        assert re.search(rf"train_check rank={rank} host={name} torch=2\.1\.2\S* ", result.output), result.output[-3000:]
    assert "train_check: 3 ranks agree (sum 6.0, expected 6)" in result.output


def test_broken_torch_fails_naming_that_node():
    broken = node("cd2")
    broken.check_output(f"mv {TORCH}/__init__.py {TORCH}/__init__.py.lockstep-test")
    try:
        result = ansible_playbook("playbooks/train_check.yml", "-e", "train_check_timeout=20")
    finally:
        broken.check_output(f"mv {TORCH}/__init__.py.lockstep-test {TORCH}/__init__.py")
    assert result.returncode != 0
    message = re.search(r"train_check: (\S+): rc (\d+): (.*?) only waited", result.output)
    assert message, result.output[-3000:]
    assert message.group(1) == "cd2"
    assert "torch" in message.group(3)
    assert broken.run("/opt/conda/envs/train/bin/python -c 'import torch'").rc == 0
