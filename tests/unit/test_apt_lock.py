"""lockstep.gpu.apt: ansible.builtin.apt waiting for the dpkg lock, a bounded number of times.

The messages are apt's own, as apt-get 2.6 (Debian 12) and python-apt print
them when another process holds a lock (molecule/faults holds them on a node
and checks the whole run). The action runs here with ansible.builtin.apt
replaced by a stand-in that answers those messages.
"""

from __future__ import annotations

from pathlib import Path
from unittest import mock

import pytest
import yaml
from ansible_collections.lockstep.gpu.plugins.action import apt as action
from ansible.plugins.action import ActionBase

APT_GET = (
    "'/usr/bin/apt-get -y -o \"Dpkg::Options::=--force-confdef\" -o DPkg::Lock::Timeout=5 install rsync' failed: "
    "E: Could not get lock /var/lib/dpkg/lock-frontend. It is held by process 4242 (python3)\n"
    "E: Unable to acquire the dpkg frontend lock (/var/lib/dpkg/lock-frontend), is another process using it?\n"
)
PYTHON_APT = ("Failed to lock apt for exclusive operation: Failed to lock directory /var/lib/apt/lists/: "
              "E:Could not get lock /var/lib/apt/lists/lock. It is held by process 77 (unattended-upgr)")
HELD = {"failed": True, "msg": APT_GET, "stderr": APT_GET, "exception": "apt's own error"}
OTHER = {"failed": True, "msg": "No package matching 'nope' is available"}


@pytest.mark.parametrize("result, holder", [
    (HELD, "/var/lib/dpkg/lock-frontend, held by process 4242 (python3)"),
    ({"failed": True, "msg": PYTHON_APT}, "/var/lib/apt/lists/lock, held by process 77 (unattended-upgr)"),
    ({"failed": True, "msg": "E: Could not get lock /var/lib/dpkg/lock. Resource temporarily unavailable"},
     "/var/lib/dpkg/lock"),
])
def test_a_held_lock_and_its_holder_are_read_from_apt(result, holder):
    assert action.lock_held(result)
    assert action.lock_holder(result) == holder


@pytest.mark.parametrize("result", [OTHER, {"changed": True, "msg": ""}, dict(HELD, failed=False)])
def test_other_outcomes_are_no_held_lock(result):
    assert not action.lock_held(result)


@pytest.mark.parametrize("value, expected", [(0, 0), ("30", 30), (" 7 ", 7)])
def test_settings_take_whole_numbers(value, expected):
    assert action.check_setting("apt_repo_lock_timeout", value) == expected


@pytest.mark.parametrize("value", [-1, "1.5", "soon", True, None])
def test_other_settings_fail_naming_variable_value_and_what_it_takes(value):
    with pytest.raises(ValueError, match=rf"apt_repo_lock_retries is {value!r}: it takes a whole number >= 0"):
        action.check_setting("apt_repo_lock_retries", value)


# The cluster contract's defaults, which every Lockstep role's tasks see.
CONTRACT = yaml.safe_load((Path(action.__file__).resolve().parents[2] / "roles/cluster/defaults/main.yml").read_text())


def test_the_cluster_contract_declares_both_settings():
    assert {name: type(CONTRACT[name]) for name in action.SETTINGS} == dict.fromkeys(action.SETTINGS, int)


def run(answers, task_vars, args=None):
    """The action with ansible.builtin.apt answering ``answers`` in turn; (result, calls)."""
    plugin = object.__new__(action.ActionModule)
    plugin._task = mock.Mock(args=args or {"name": ["rsync"], "state": "present"})
    plugin._templar = mock.Mock(template=lambda value: value)
    calls = []

    def execute(module_name, module_args, task_vars):
        calls.append((module_name, dict(module_args)))
        return dict(answers[len(calls) - 1])

    plugin._execute_module = execute
    with mock.patch.object(ActionBase, "run", return_value={}):
        return plugin.run(task_vars=dict(task_vars, inventory_hostname="ft2")), calls


def test_a_lock_still_held_is_tried_retries_plus_one_times_then_fails_naming_lock_holder_node_and_variables():
    result, calls = run([HELD] * 3, {"apt_repo_lock_timeout": 5, "apt_repo_lock_retries": 2})
    assert [call[0] for call in calls] == ["ansible.builtin.apt"] * 3
    assert {call[1]["lock_timeout"] for call in calls} == {5}
    assert result["failed"] and "exception" not in result
    assert result["msg"].startswith(
        "The dpkg lock is held on ft2: /var/lib/dpkg/lock-frontend, held by process 4242 (python3). "
        "apt waited 5 s for it 3 time(s).")
    assert "apt_repo_lock_timeout (now 5, seconds) or apt_repo_lock_retries (now 2)" in result["msg"]


# What apt answered on the last of two tries in a fresh-clone suite run under load: no "It is held by
# process" line, while the first try's answer had one.
UNNAMED_HOLDER = "E: Unable to acquire the dpkg frontend lock (/var/lib/dpkg/lock-frontend), is another process using it?"


def test_apt_s_answer_without_a_holder_names_the_lock_or_keeps_what_an_earlier_try_named():
    held = {"failed": True, "msg": UNNAMED_HOLDER}
    assert action.lock_holder(held) == "/var/lib/dpkg/lock-frontend"
    assert action.lock_holder(held, "/var/lib/dpkg/lock-frontend, held by process 7 (python3)") == (
        "/var/lib/dpkg/lock-frontend, held by process 7 (python3)")
    assert action.lock_holder({"failed": True, "msg": "E: Could not get lock"}) == action.UNNAMED


def test_a_holder_named_by_an_earlier_try_stays_in_the_message_when_the_last_answer_names_none():
    held = {"failed": True, "msg": UNNAMED_HOLDER, "exception": "apt's own error"}
    result, calls = run([HELD, held], {"apt_repo_lock_timeout": 5, "apt_repo_lock_retries": 1})
    assert len(calls) == 2
    assert result["msg"].startswith(
        "The dpkg lock is held on ft2: /var/lib/dpkg/lock-frontend, held by process 4242 (python3). "
        "apt waited 5 s for it 2 time(s).")


def test_a_lock_released_between_tries_ends_in_apt_s_own_result():
    result, calls = run([HELD, {"changed": True, "msg": ""}], {"apt_repo_lock_timeout": 5, "apt_repo_lock_retries": 2})
    assert len(calls) == 2
    assert result == {"changed": True, "msg": ""}


def test_other_failures_are_not_retried_and_keep_apt_s_message():
    result, calls = run([OTHER], {"apt_repo_lock_timeout": 5, "apt_repo_lock_retries": 2})
    assert len(calls) == 1
    assert result["msg"] == OTHER["msg"]


def test_without_inventory_settings_the_contract_s_defaults_apply_and_a_task_s_own_lock_timeout_wins():
    defaults = {name: CONTRACT[name] for name in action.SETTINGS}
    _result, calls = run([{"changed": False}], defaults)
    assert calls[0][1]["lock_timeout"] == 120
    _result, calls = run([{"changed": False}], defaults, args={"name": ["rsync"], "lock_timeout": 9})
    assert calls[0][1]["lock_timeout"] == 9


def test_without_the_settings_at_all_it_fails_naming_them_and_the_contract():
    result, calls = run([], {"apt_repo_lock_timeout": 5})
    assert calls == []
    assert result["failed"]
    assert result["msg"].startswith("apt_repo_lock_retries is not set: the action lockstep.gpu.apt reads them from "
                                    "the cluster contract (role lockstep.gpu.cluster")


def test_a_bad_setting_fails_before_apt_runs():
    result, calls = run([], {"apt_repo_lock_timeout": "soon", "apt_repo_lock_retries": 2})
    assert calls == []
    assert result == {"failed": True, "msg": "apt_repo_lock_timeout is 'soon': it takes a whole number of seconds >= 0"}
