"""The batched reboot play of playbooks/nvidia_driver.yml (so of site.yml).

The play is taken verbatim from the playbook and run by ansible-playbook on
three inventory hosts that are this controller (local connection), after a
play that marks them as nodes needing a reboot, as role nvidia_driver does.
ansible.builtin.reboot refuses a local connection ("would reboot the control
node"), and the run is in check mode too, where the module never reboots:
nothing here can reboot this machine. Each refused reboot is an unhealthy
node, so the play must stop the rollout after the first batch, naming the
node, and never touch the nodes of later batches.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
PLAYBOOK = ROOT / "playbooks" / "nvidia_driver.yml"
ANSIBLE_PLAYBOOK = ROOT / ".venv" / "bin" / "ansible-playbook"
ENV = dict(os.environ, ANSIBLE_CACHE_PLUGIN="memory", ANSIBLE_NOCOLOR="1", ANSIBLE_LOCALHOST_WARNING="False",
           ANSIBLE_CALLBACK_RESULT_FORMAT="json")


def _reboot_play() -> dict:
    plays = yaml.safe_load(PLAYBOOK.read_text())
    found = [p for p in plays if p.get("hosts") == "nvidia_driver_reboot_pending"]
    assert len(found) == 1, "playbooks/nvidia_driver.yml must have one play for group nvidia_driver_reboot_pending"
    return found[0]


def _run(tmp_path: Path, batch) -> subprocess.CompletedProcess:
    inventory = {"all": {"hosts": {h: {"ansible_connection": "local", "ansible_python_interpreter":
                                       str(ROOT / ".venv" / "bin" / "python")} for h in ("n1", "n2", "n3")},
                         "vars": {"nvidia_driver_reboot_batch": batch}}}
    mark = {"name": "Mark every node as role nvidia_driver does when its loaded module is not the installed one",
            "hosts": "all", "gather_facts": False,
            "tasks": [{"ansible.builtin.set_fact": {"nvidia_driver_installed_version": "535.261.03"}},
                      {"ansible.builtin.group_by": {"key": "nvidia_driver_reboot_pending"}, "changed_when": False}]}
    (tmp_path / "hosts.yml").write_text(yaml.safe_dump(inventory))
    (tmp_path / "play.yml").write_text(yaml.safe_dump([mark, _reboot_play()], sort_keys=False))
    return subprocess.run([str(ANSIBLE_PLAYBOOK), "--check", "-i", str(tmp_path / "hosts.yml"),
                           str(tmp_path / "play.yml")], capture_output=True, text=True, cwd=ROOT, env=ENV,
                          check=False)


def _rebooted(output: str) -> list:
    return sorted(set(re.findall(r"(n\d) is not healthy after its reboot", output)))


def test_the_play_reboots_marked_nodes_in_serial_batches_and_stops_at_the_first_failure():
    play = _reboot_play()
    assert play["max_fail_percentage"] == 0
    tasks = play["tasks"]
    assert tasks[0]["ansible.builtin.include_role"] == {"name": "lockstep.gpu.nvidia_driver", "tasks_from": "reboot"}


def test_one_node_at_a_time_by_default_and_the_rollout_stops_at_the_first_unhealthy_node(tmp_path):
    result = _run(tmp_path, 1)
    output = result.stdout + result.stderr
    assert result.returncode != 0
    # One node (group_by adds the nodes in the order they finish), then the rollout stops.
    assert len(_rebooted(output)) == 1, output[-3000:]
    assert "would reboot the control node" in output
    assert "The rollout stops here; nodes not yet rebooted keep their running driver." in output
    assert "NO MORE HOSTS LEFT" in output


def test_the_batch_size_comes_from_the_inventory(tmp_path):
    result = _run(tmp_path, 2)
    output = result.stdout + result.stderr
    assert result.returncode != 0
    assert len(_rebooted(output)) == 2, output[-3000:]
