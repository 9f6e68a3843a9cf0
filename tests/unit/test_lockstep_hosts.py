"""roles/base/files/lockstep_hosts.py, which lockstep-hosts.service runs at
boot: the cluster's names go back into /etc/hosts when something rewrote it
(issue 29, finding 8: after `podman restart dp2` the node's /etc/hosts had
lost them and slurm_check.yml failed with "No answer from dp2"). The
podman-written file below is what podman 4.3 writes into a container on
this project's networks.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "roles/base/files/lockstep_hosts.py"
BLOCK = ("# BEGIN Lockstep cluster nodes (role base)\n10.231.1.11 dp1\n10.231.1.12 dp2\n10.231.1.13 dp3\n"
         "# END Lockstep cluster nodes (role base)\n")
PODMAN = "127.0.0.1\tlocalhost\n::1\tlocalhost\n10.231.1.12\tdp2 dp2\n"


def run(tmp_path, hosts_text):
    block, hosts = tmp_path / "hosts.block", tmp_path / "hosts"
    block.write_text(BLOCK)
    if hosts_text is not None:
        hosts.write_text(hosts_text)
    done = subprocess.run([sys.executable, str(SCRIPT), str(block), str(hosts)], capture_output=True, text=True,
                          check=False)
    assert done.returncode == 0, done.stderr
    return hosts.read_text(), done.stdout


def test_a_file_podman_rewrote_gets_the_block_back_and_keeps_its_own_lines(tmp_path):
    text, said = run(tmp_path, PODMAN)
    assert text == PODMAN + BLOCK
    assert "the cluster's names restored" in said


def test_a_file_that_holds_the_block_is_left_alone(tmp_path):
    whole = "127.0.0.1 localhost\n" + BLOCK + "10.0.0.9 nas1\n"
    text, said = run(tmp_path, whole)
    assert text == whole and said == ""


def test_an_old_block_is_replaced_not_repeated(tmp_path):
    old = BLOCK.replace("10.231.1.13 dp3", "10.231.9.99 dp3")
    text, _said = run(tmp_path, PODMAN + old + "10.0.0.9 nas1\n")
    assert text == PODMAN + "10.0.0.9 nas1\n" + BLOCK
    assert text.count("dp3") == 1


def test_a_missing_file_is_written(tmp_path):
    text, _said = run(tmp_path, None)
    assert text == BLOCK
