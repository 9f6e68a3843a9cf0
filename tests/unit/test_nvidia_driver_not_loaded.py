"""gpu_facts on a node whose NVIDIA driver is installed but not loaded.

That is every node between a driver install and its reboot, and every test
container of the nvidia scenario: nvidia-smi exits with status 9 ("NVIDIA
driver is not loaded", the RETURN VALUE section of nvidia-smi(1), printed
as "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA
driver. ..."). The driver must then read as installed, not loaded, with the
version its packages carry -- not as an unreadable source. Any other
failure of nvidia-smi stays an error naming the command.
"""

from __future__ import annotations

import json
import os

from ansible_collections.lockstep.gpu.plugins.module_utils.collect import Runner, collect_live
from ansible_collections.lockstep.gpu.plugins.module_utils.analyse import analyse

NOT_LOADED = ("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
              "Make sure that the latest NVIDIA driver is installed and running.\n")
# dpkg-query -W -f "${Package}\t${Version}\t${db:Status-Abbrev}\n" on a node of
# the nvidia scenario (driver packages from the CUDA repository, branch 535).
PACKAGES = "".join(f"{name}\t{version}\tii \n" for name, version in (
    ("base-files", "12.4+deb12u11"),
    ("cuda-drivers-535", "535.261.03-1"),
    ("libcuda1", "535.261.03-1"),
    ("nvidia-kernel-dkms", "535.261.03-1"),
    ("nvidia-smi", "535.261.03-1"),
))


class Runner(Runner):
    def __init__(self, outputs):
        self.outputs = outputs

    def which(self, name, opt_dirs=()):
        return f"/fake/bin/{name}" if name in self.outputs else None

    def run(self, argv):
        return self.outputs[os.path.basename(argv[0])]


def _paths(tmp_path):
    absent = str(tmp_path / "absent")
    return {"proc_driver": absent, "cuda_link": absent, "cuda_root": absent, "nccl_headers": (),
            "sys_class_net": absent, "sys_class_infiniband": absent}


def test_driver_not_loaded_reads_as_installed_with_the_package_version(tmp_path):
    runner = Runner({"nvidia-smi": (9, NOT_LOADED, ""), "dpkg-query": (0, PACKAGES, "")})
    raw = collect_live(runner, conda_envs_dirs=[], paths=_paths(tmp_path))
    assert raw["nvidia-smi-q-x.xml"] is None
    assert raw["collect-errors.json"] is None
    driver = analyse(raw)["driver"]
    assert driver["present"] is True and driver["loaded"] is False
    assert driver["version"] == "535.261.03" and driver["source"] == "package"
    assert driver["packages"]["cuda-drivers-535"] == "535.261.03-1"


def test_other_nvidia_smi_failures_stay_errors(tmp_path):
    # 12: "NVML Shared Library couldn't be found or loaded" (nvidia-smi(1)).
    runner = Runner({"nvidia-smi": (12, "NVIDIA-SMI couldn't find libnvidia-ml.so library in your system.\n", ""),
                     "dpkg-query": (0, PACKAGES, "")})
    raw = collect_live(runner, conda_envs_dirs=[], paths=_paths(tmp_path))
    problems = json.loads(raw["collect-errors.json"])
    assert "exited with status 12" in problems["nvidia-smi-q-x.xml"]
    assert "error" in analyse(raw)["driver"]
