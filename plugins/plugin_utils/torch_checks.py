# -*- coding: utf-8 -*-
# Copyright: Lockstep contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Checks within one node between its conda environments' torch and the
node's own GPU stack, where version drift bites even when every node agrees.

The filter lockstep.gpu.torch_check calls :func:`torch_check` on the
components of every host (``{host: {component: value}}``, see
components.py), after name_check and before lockstep.gpu.drift:

- ``conda.<env>.torch_driver``, one component per environment holding a
  CUDA build of torch on a node whose driver version is known: ``compatible``
  when the driver can run torch's CUDA build (``conda.<env>.torch_cuda``).
  PyPI's torch wheels carry their own CUDA runtime (the nvidia-*-cu12
  wheels), so CUDA minor version compatibility applies: a CUDA 12.1 build
  needs driver >= 525.60.13, and >= 530.30.02 (the toolkit's own driver)
  without it (mode ``toolkit``). Anything else names both versions. It is
  declared ``compatible`` for the drift report, so a cluster where every
  node has too old a driver drifts on every node.
- a warning where ``conda.<env>.torch_nccl`` (the nvidia-nccl-cu12 wheel
  torch loads) and ``nccl.package`` (the system libnccl2 that /etc/nccl.conf
  tunes) differ in major.minor: NCCL reads /etc/nccl.conf whichever copy is
  loaded, but a tuning tested with one release may not hold with another,
  and a node whose jobs load another NCCL than its neighbours' is the
  classic reason a run hangs. A warning, not a drift: both versions may be
  exactly what the cluster declared.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from ansible.errors import AnsibleFilterError
from ansible_collections.lockstep.gpu.plugins.plugin_utils.cuda import CUDA_MODES, cuda_min_driver
from ansible_collections.lockstep.gpu.plugins.plugin_utils.versions import nvidia_cmp, pkg_upstream

OK = "compatible"
_ENV_KEY = re.compile(r"^conda\.(?P<env>.+)\.(?P<field>torch_cuda|torch_nccl)$")


def torch_driver(torch_cuda, driver, mode="minor_compat"):
    """``compatible``, or why ``driver`` cannot run a torch built for CUDA ``torch_cuda``."""
    if mode not in CUDA_MODES:
        raise AnsibleFilterError(f"torch_check: mode must be one of {', '.join(CUDA_MODES)}, got {mode!r}")
    try:
        needed, toolkit = cuda_min_driver(torch_cuda, mode), cuda_min_driver(torch_cuda, "toolkit")
    except AnsibleFilterError as exc:
        return f"torch's CUDA build {torch_cuda} cannot be checked: {exc}"
    if nvidia_cmp(pkg_upstream(driver), needed) >= 0:
        return OK
    how = f" (>= {toolkit} without minor version compatibility)" if needed != toolkit else ""
    return f"torch built for CUDA {torch_cuda} needs NVIDIA driver >= {needed}{how}; the driver is {driver}"


def _major_minor(version):
    return ".".join(pkg_upstream(version).split(".")[:2])


def torch_nccl_warning(host, env, torch_nccl, system_nccl):
    """A warning naming both NCCLs when their major.minor differ; None when they agree."""
    wheel, system = _major_minor(torch_nccl), _major_minor(system_nccl)
    if wheel == system:
        return None
    return (f"{host}: environment {env} loads NCCL {torch_nccl} (conda.{env}.torch_nccl, the wheel torch uses), "
            f"the system has libnccl2 {system_nccl} (nccl.package, what /etc/nccl.conf tunes): NCCL {wheel} vs "
            f"{system}; pin nvidia-nccl-cu12 to {system}.x in the environment, or libnccl2 to {wheel}.x")


def torch_check(facts, mode="minor_compat"):
    """``{"components", "expected", "warnings"}``; see the module docstring."""
    if not isinstance(facts, Mapping):
        raise AnsibleFilterError(f"torch_check: expected {{host: {{component: value}}}}, got {type(facts).__name__}")
    checked, expected, warnings = {}, {}, []
    for host, components in facts.items():
        if not isinstance(components, Mapping):
            raise AnsibleFilterError(f"torch_check: the components of {host!r} are not a mapping")
        out = dict(components)
        driver, system_nccl = components.get("driver.version"), components.get("nccl.package")
        for key in sorted(components):
            match = _ENV_KEY.match(key)
            value = components[key]
            if not match or not isinstance(value, str):
                continue
            env = match.group("env")
            if match.group("field") == "torch_cuda" and isinstance(driver, str):
                out[f"conda.{env}.torch_driver"] = torch_driver(value, driver, mode)
                expected[f"conda.{env}.torch_driver"] = OK
            elif match.group("field") == "torch_nccl" and isinstance(system_nccl, str):
                warning = torch_nccl_warning(host, env, value, system_nccl)
                if warning:
                    warnings.append(warning)
        checked[host] = out
    return {"components": checked, "expected": expected, "warnings": warnings}
