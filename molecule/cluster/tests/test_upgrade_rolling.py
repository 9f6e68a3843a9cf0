"""Issue 27: a rolling upgrade of NCCL through Slurm, on the converged cluster.

The cluster is locked (playbooks/lock.yml) at NCCL 2.18.3, then the inventory
asks for 2.19.3-1+cuda12.3 (the stand-in repository's newer build; -e stands
for the inventory's edit) and playbooks/rolling_upgrade.yml rolls it out one
node at a time, dp1 first (the canary). An admin has drained dp1 for their
own reason; dp2 carries a diversion that keeps a hand-built 2.19.1 nccl.h over
the package's; dp3 runs a job. The first run upgrades dp1 (still drained with
the admin's reason), writes the canary's NCCL values into the lock, drains
dp2, converges it and stops there naming dp2's header: dp2 stays drained with
the upgrade's reason, dp3 keeps 2.18.3 and its job. Once dp2 is fixed, the
second run resumes dp2 and drains dp3, waits for its job to end and only then
upgrades and resumes it; verify.yml then passes against the new lock. Then
playbooks/driver_upgrade.yml, the rollout's driver case, drains and resumes
each node in service and keeps dp3's admin drain.

Runs after test_site.py (file order): it changes the cluster's NCCL.
"""

from __future__ import annotations

import re
import shlex
import threading
from datetime import datetime

import pytest
import yaml
from conftest import ansible_playbook, node, wait_until

HEAD = "dp1"
OLD, NEW = "2.18.3-1+cuda12.1", "2.19.3-1+cuda12.3"
REASON = "lockstep rolling upgrade: nccl"
ADMIN_REASON = "admin: fan check"
RELEASE = "/tmp/lockstep-rolling-release"  # the job on dp3 ends when this file exists
JOB_DONE = "/tmp/lockstep-rolling-job.done"
HEADER = "/usr/include/nccl.h"


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    """verify_reports_dir; the lock (verify_lock_file) is stack-lock.yml beside it."""
    return tmp_path_factory.mktemp("rolling") / "reports"


def upgrade_args(reports):
    return ["-e", '{"rolling_roles": ["nccl"]}', "-e", "nccl_version=2.19.3-1", "-e", "nccl_cuda_version=12.3",
            "-e", f"verify_reports_dir={reports}"]


def sinfo():
    """{node: (state, reason)} as the controller reads it."""
    out = node(HEAD).check_output("sinfo --noheader --Node --format '%N|%T|%E'")
    return {name: (state, reason) for name, state, reason in (line.split("|") for line in out.splitlines())}


def back_in_service(*names):
    """Wait until the nodes are idle and answer slurmctld's pings: on a loaded machine a node the rollout
    resumed may show 'idle*' (not responding) until the next ping, up to SlurmdTimeout/3 (100 s) later."""
    return wait_until(f"{', '.join(names)} idle and responding",
                      lambda: all(sinfo()[name][0] == "idle" for name in names), seconds=240)


def nccl_package(name):
    return node(name).check_output("dpkg-query --showformat '${Version}' --show libnccl2")


def test_rolling_upgrade_stops_at_a_node_that_differs_and_resumes_after_its_fix(reports):
    result = ansible_playbook("playbooks/lock.yml", "-e", f"verify_reports_dir={reports}")
    assert result.returncode == 0, result.stdout[-3000:]
    lock_file = reports.parent / "stack-lock.yml"
    before = yaml.safe_load(lock_file.read_text())["components"]
    assert before["nccl.package"] == OLD

    head, dp2, dp3 = node(HEAD), node("dp2"), node("dp3")
    head.check_output(f"scontrol update nodename=dp1 state=drain reason={shlex.quote(ADMIN_REASON)}")
    dp2.check_output(f"dpkg-divert --add --rename --divert {HEADER}.site {HEADER}")
    dp2.check_output(f"printf '#define NCCL_MAJOR 2\\n#define NCCL_MINOR 19\\n#define NCCL_PATCH 1\\n' >{HEADER}")
    dp3.run_expect([0], f"rm -f {RELEASE} {JOB_DONE}")
    job = f"while [ ! -e {RELEASE} ]; do sleep 1; done; date +%s.%N >{JOB_DONE}"
    head.check_output(f"sbatch --parsable --nodelist=dp3 --nodes=1 --output=/dev/null --wrap {shlex.quote(job)}")
    wait_until("the job running on dp3", lambda: sinfo()["dp3"][0] in ("allocated", "mixed"), seconds=60)

    result = ansible_playbook("playbooks/rolling_upgrade.yml", *upgrade_args(reports))
    assert result.returncode != 0, result.stdout[-3000:]
    assert "dp2: nccl.header expected 2.19.3, actual 2.19.1" in result.output, result.stdout[-3000:]
    states = sinfo()
    assert states["dp1"] == ("drained", ADMIN_REASON), states
    assert states["dp2"] == ("drained", REASON), states
    assert states["dp3"][0] in ("allocated", "mixed"), states
    assert [nccl_package(n) for n in ("dp1", "dp2", "dp3")] == [NEW, NEW, OLD]
    assert not dp3.file(JOB_DONE).exists
    # The canary's NCCL became the lock; every other component kept its value.
    lock = yaml.safe_load(lock_file.read_text())
    assert lock["upgrade"]["canary"] == "dp1"
    assert lock["components"]["nccl.package"] == NEW and lock["components"]["nccl.header"] == "2.19.3"
    unchanged = {k: v for k, v in before.items() if not k.startswith(("nccl.", "nccl_conf.", "pkg.libnccl"))}
    assert {k: lock["components"].get(k) for k in unchanged} == unchanged

    dp2.check_output(f"rm {HEADER} && dpkg-divert --remove --rename {HEADER}")
    # The job ends while the second run waits on dp3's drain: dp3 must not change before it has.
    releaser = threading.Thread(target=lambda: (
        wait_until("dp3 draining", lambda: sinfo()["dp3"][0] == "draining", seconds=900),
        dp3.check_output(f"touch {RELEASE}")), daemon=True)
    releaser.start()
    # A bounded wait: a job that never ended would stop the run with the job named, not hang it.
    result = ansible_playbook("playbooks/rolling_upgrade.yml", *upgrade_args(reports), "-e", "slurm_drain_job_wait=300")
    releaser.join(timeout=5)
    assert result.returncode == 0, result.stdout[-3000:]
    back_in_service("dp2", "dp3")
    states = sinfo()
    assert states["dp1"] == ("drained", ADMIN_REASON), states
    assert [nccl_package(n) for n in ("dp1", "dp2", "dp3")] == [NEW, NEW, NEW]
    ended = float(dp3.file(JOB_DONE).content_string)
    upgraded = dp3.check_output(f"grep ' upgrade libnccl2:amd64 {OLD} {NEW}$' /var/log/dpkg.log | tail -n 1")
    assert datetime.strptime(upgraded[:19], "%Y-%m-%d %H:%M:%S").timestamp() >= int(ended), (upgraded, ended)

    result = ansible_playbook("playbooks/verify.yml", *upgrade_args(reports)[2:])
    assert result.returncode == 0, result.stdout[-3000:]
    head.check_output("scontrol update nodename=dp1 state=resume")


def test_driver_upgrade_is_the_rollout_s_driver_case_and_keeps_an_admin_drain(reports):
    """playbooks/driver_upgrade.yml, on the upgraded cluster with its new lock: the same rollout with
    rolling_roles [nvidia_driver] (the stand-in repository has one driver build, so the driver stays at
    535.261.03; a real new driver would also reboot each node inside its batch, which containers skip).
    Each node in service is drained with the driver upgrade's reason before its converge and resumed after
    its check; dp3, drained by an admin, is upgraded, named and left drained."""
    head = node(HEAD)
    admin_reason = "admin: RMA GPU 3 Xid 79"
    head.check_output(f"scontrol update nodename=dp3 state=drain reason={shlex.quote(admin_reason)}")
    seen = int(head.check_output("wc -l </var/log/slurm/slurmctld.log"))
    result = ansible_playbook("playbooks/driver_upgrade.yml", *upgrade_args(reports)[2:])
    assert result.returncode == 0, result.stdout[-3000:]
    log = head.check_output(f"tail -n +{seen + 1} /var/log/slurm/slurmctld.log")
    drained = re.findall(r"node (dp\d) reason set to: lockstep rolling upgrade: nvidia_driver$", log, re.M)
    assert drained == ["dp1", "dp2"], log
    assert f"dp3 drained: {admin_reason} (set by root" in result.output, result.stdout[-3000:]
    back_in_service("dp1", "dp2")
    assert sinfo()["dp3"] == ("drained", admin_reason)
    lock = yaml.safe_load((reports.parent / "stack-lock.yml").read_text())
    assert lock["upgrade"]["canary"] == "dp1" and "driver.*" in lock["upgrade"]["components"], lock["upgrade"]
    assert lock["components"]["driver.version"] == "535.261.03"
    head.check_output("scontrol update nodename=dp3 state=resume")
