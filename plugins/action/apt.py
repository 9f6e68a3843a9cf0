# -*- coding: utf-8 -*-
# Copyright: Lockstep contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin lockstep.gpu.apt: ansible.builtin.apt that waits for the dpkg lock.

Every apt task of the roles runs through it. It passes its arguments to
ansible.builtin.apt with ``lock_timeout`` set from ``apt_repo_lock_timeout``,
runs it again up to ``apt_repo_lock_retries`` times while another process
holds the dpkg or apt lock (unattended-upgrades at first boot), and then
fails saying which lock is held, by which process, on which node, and which
variables to raise. Both settings are the cluster contract's (role
lockstep.gpu.cluster, which every Lockstep role depends on): they come with
the task's variables, the inventory's or else the contract's defaults.
"""

from __future__ import annotations

import re

from ansible.plugins.action import ActionBase
from ansible.utils.display import Display

display = Display()

# The settings, from the task's variables (declared by the cluster contract).
SETTINGS = ("apt_repo_lock_timeout", "apt_repo_lock_retries")

# What apt-get and python-apt say when a lock is held.
LOCK_HELD = re.compile(
    r"Could not get lock|Unable to acquire the dpkg frontend lock|Unable to lock (?:the )?(?:administration )?directory"
    r"|Failed to lock apt for exclusive operation"
)
HOLDER = re.compile(r"Could not get lock (?P<path>/\S+?)\.? It is held by process (?P<pid>\d+)(?: \((?P<name>[^)]*)\))?")
LOCK_PATH = re.compile(r"Could not get lock (?P<path>/\S+?)[.\s]")
FRONTEND = re.compile(r"Unable to acquire the dpkg frontend lock \((?P<path>/[^)\s]+)\)")
UNNAMED = "apt did not name the lock or its holder"


def lock_held(result: dict) -> bool:
    """Did apt fail because another process holds the dpkg or apt lock?"""
    return bool(result.get("failed")) and bool(LOCK_HELD.search(_text(result)))


def lock_holder(result: dict, earlier: str = "") -> str:
    """'/var/lib/dpkg/lock-frontend, held by process 123 (unattended-upgr)', as far as apt tells.

    ``earlier`` is what an earlier try of the same task found: apt's answer to a wait that timed out does
    not always carry its "It is held by process" line (seen under load: only "Unable to acquire the dpkg
    frontend lock"), and a holder named seconds before is worth more than the lock's path alone.
    """
    text = _text(result)
    found = HOLDER.search(text)
    if found:
        name = f" ({found['name']})" if found["name"] else ""
        return f"{found['path']}, held by process {found['pid']}{name}"
    if "held by process" in earlier:
        return earlier
    found = LOCK_PATH.search(text) or FRONTEND.search(text)
    return found["path"] if found else (earlier or UNNAMED)


def _text(result: dict) -> str:
    return " ".join(str(result.get(key) or "") for key in ("msg", "stderr", "stdout"))


def check_setting(name: str, value) -> int:
    """The setting as a whole number >= 0, or ValueError naming it, its value and what it takes."""
    if isinstance(value, bool) or not re.fullmatch(r"\d+", str(value).strip()):
        raise ValueError(f"{name} is {value!r}: it takes a whole number of seconds >= 0"
                         if name.endswith("timeout") else f"{name} is {value!r}: it takes a whole number >= 0")
    return int(str(value).strip())


class ActionModule(ActionBase):
    """Run ansible.builtin.apt, waiting for the dpkg lock a bounded number of times."""

    TRANSFERS_FILES = False
    _supports_check_mode = True
    _supports_async = False

    def _settings(self, task_vars: dict) -> tuple[int, int]:
        missing = [name for name in SETTINGS if name not in task_vars]
        if missing:
            raise ValueError(
                f"{' and '.join(missing)} {'is' if len(missing) == 1 else 'are'} not set: the action lockstep.gpu.apt "
                "reads them from the cluster contract (role lockstep.gpu.cluster, which every Lockstep role depends "
                "on); run it in a play that lists lockstep.gpu.cluster or a Lockstep role, or set them")
        values = [check_setting(name, self._templar.template(task_vars[name])) for name in SETTINGS]
        return values[0], values[1]

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        result = super().run(tmp, task_vars)
        try:
            timeout, retries = self._settings(task_vars)
        except ValueError as error:
            result.update(failed=True, msg=str(error))
            return result
        args = dict(self._task.args)
        args.setdefault("lock_timeout", timeout)
        waited = args["lock_timeout"]
        host = task_vars.get("inventory_hostname", "this node")
        holder = ""
        for attempt in range(1, retries + 2):
            outcome = self._execute_module(module_name="ansible.builtin.apt", module_args=args, task_vars=task_vars)
            if not lock_held(outcome) or attempt > retries:
                break
            holder = lock_holder(outcome, holder)
            display.warning(f"{host}: {holder}; apt waited {waited} s for the dpkg lock, "
                            f"trying again ({attempt} of apt_repo_lock_retries={retries} retries)")
        result.update(outcome)
        if lock_held(outcome):
            holder = lock_holder(outcome, holder)
            # apt's own error (ansible-core 2.19 prints it as the task's error) gives way to this message.
            result.pop("exception", None)
            result["msg"] = (
                f"The dpkg lock is held on {host}: {holder}. apt waited {waited} s for it "
                f"{retries + 1} time(s). Let that process finish (or stop it), or raise apt_repo_lock_timeout "
                f"(now {timeout}, seconds) or apt_repo_lock_retries (now {retries}) in the inventory. "
                f"apt said: {outcome.get('msg', '')}"
            )
        return result
