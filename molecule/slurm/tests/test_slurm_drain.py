"""Issue 27: a converge never undoes an admin's drain. sl3 is drained by an
admin with a reason; sl2 is drained by Slurm itself, as slurmctld does for a
node whose registration does not match slurm.conf: the head's slurm.conf
declares more memory for sl2 than it has, then is put back, both with
`scontrol reconfigure` (a stale file fixed by hand). Slurm keeps sl2 drained
after that (it lifts such a drain itself only at a restart), so the
converge must resume it. The converge resumes sl2, leaves sl3 drained with
the admin's reason, passes, and names sl3 with the reason and who set it.
Runs after test_slurm.py (file order) and leaves every node idle.
"""

from __future__ import annotations

import re

from conftest import ansible_playbook, node, wait_until

NODES = ("sl1", "sl2", "sl3")
HEAD = "sl1"
ADMIN_REASON = "RMA: GPU 3 Xid 79"


def sinfo() -> dict:
    """{node: (state, reason)} from sinfo."""
    out = node(HEAD).check_output("sinfo --noheader --Node --partition batch --format '%N|%T|%E'")
    return {name: (state, reason) for name, state, reason in (row.split("|", 2) for row in out.splitlines())}


def sha256(name: str, path: str) -> str:
    return node(name).check_output(f"sha256sum {path}").split()[0]


def resumed_by(output: str) -> str:
    """What the role's resume task printed (the lines after its header)."""
    at = output.find("Resume the compute nodes Slurm took out of service")
    return output[at:at + 400] if at >= 0 else ""


def test_an_admin_drain_survives_the_converge_and_slurms_own_drain_is_resumed():
    head = node(HEAD)
    good = sha256(HEAD, "/etc/slurm/slurm.conf")
    head.check_output(f"scontrol update nodename=sl3 state=drain reason='{ADMIN_REASON}'")
    try:
        head.check_output("cp /etc/slurm/slurm.conf /root/slurm.conf.good && sed -i"
                          r" 's/^\(NodeName=sl2 .*RealMemory=\)[0-9]*/\1999999/' /etc/slurm/slurm.conf"
                          " && scontrol reconfigure")
        wait_until("Slurm draining sl2 for Low RealMemory",
                   lambda: sinfo()["sl2"][1].startswith("Low RealMemory (reported:"))
        head.check_output("cp /root/slurm.conf.good /etc/slurm/slurm.conf && scontrol reconfigure")
        wait_until("sl2 drained with Slurm's reason", lambda: sinfo()["sl2"][0] == "drained")
        # A short wait before the resume: Slurm does not lift this drain itself.
        result = ansible_playbook("playbooks/slurm.yml", "-e", "slurm_wait_retries=4")
        assert result.returncode == 0, result.output[-3000:]
        assert "changed: [sl1" in resumed_by(result.output), result.output[-3000:]
        assert re.search(rf"sl3 drained: {re.escape(ADMIN_REASON)} \(set by root at [0-9T:-]+\)", result.output), \
            result.output[-3000:]
        assert sha256(HEAD, "/etc/slurm/slurm.conf") == good
        states = sinfo()
        assert states["sl3"] == ("drained", ADMIN_REASON), states
        assert states["sl1"][0] == "idle" and states["sl2"][0] == "idle", states
    finally:
        head.run("cp /root/slurm.conf.good /etc/slurm/slurm.conf 2>/dev/null; scontrol update nodename=sl3 state=resume")
    wait_until("every node idle again", lambda: {name: s[0] for name, s in sinfo().items()}
               == dict.fromkeys(NODES, "idle"))
