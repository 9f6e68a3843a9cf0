# -*- coding: utf-8 -*-
# Copyright: Lockstep contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The preflight rules of role nccl (what roles/nccl/tasks/preflight.yml checked in Jinja).

/etc/nccl.conf's settings are the role's own ``nccl_conf_settings`` (the
fabric profile combined with nccl_conf_overrides, vars/main.yml), checked by
the filter lockstep.gpu.nccl_conf_problems against the node's interfaces
(the probe's, else the facts') and HCAs: the probe's ``hcas`` where
nccl_ib_sysfs is /sys/class/infiniband, else its ``hcas_at`` of that
directory (a stand-in the probe lists on request, ``hca_roots``).
"""

from __future__ import annotations

import re

from ansible_collections.lockstep.gpu.plugins.filter.nccl import nccl_conf_problems, nccl_hca_ports
from ansible_collections.lockstep.gpu.plugins.plugin_utils.problems import Problem

# Derived values of roles/nccl/vars/main.yml: the settings /etc/nccl.conf gets and the
# interface list of the default route, rendered exactly as the role renders them.
VARIABLES: tuple[str, ...] = ("nccl_conf_settings", "nccl_socket_ifname_effective")

# tasks/preflight.yml's '^\d+\.\d+\.\d+-\d+$' and '^\d+\.\d+$' (ASCII digits: apt's version).
_VERSION = re.compile(r"[0-9]+\.[0-9]+\.[0-9]+-[0-9]+")
_CUDA = re.compile(r"[0-9]+\.[0-9]+")
RDMA_FABRICS = ("roce", "infiniband")
# What the probe lists as ``hcas``.
SYSFS = "/sys/class/infiniband"
# One name[:port] of NCCL_IB_HCA (the filter refuses other forms).
_HCA_ITEM = re.compile(r"([A-Za-z0-9_.-]+)(?::([0-9]+))?")


def _probe(ctx, host) -> dict:
    answer = ctx.probe(host)
    return answer if isinstance(answer, dict) else {}


def _settings(ctx, host) -> dict | None:
    settings = ctx.var(host, "nccl_conf_settings")
    return settings if isinstance(settings, dict) else None


def _overrides(ctx, host) -> dict:
    overrides = ctx.var(host, "nccl_conf_overrides")
    return overrides if isinstance(overrides, dict) else {}


def _no_route(ctx, host) -> bool:
    """nccl_socket_ifname empty and no default route to derive NCCL_SOCKET_IFNAME from."""
    effective = ctx.var(host, "nccl_socket_ifname_effective")
    return (ctx.var(host, "nccl_socket_ifname") == "" and ctx.has(host, "nccl_socket_ifname_effective")
            and len(str(effective).strip()) <= 1)


def _topo_file(settings: dict) -> str:
    """NCCL_TOPO_FILE, '' when unset (Jinja's default('', true) | string)."""
    value = settings.get("NCCL_TOPO_FILE")
    return str(value) if value else ""


def _sysfs(ctx, host) -> str:
    value = ctx.var(host, "nccl_ib_sysfs", SYSFS)
    return (str(value).rstrip("/") or "/") if value else SYSFS


def _hca_items(value) -> list[tuple[str, str]]:
    """(name, port or '') of an NCCL_IB_HCA value; [] for an exclusion list (nothing must exist)."""
    text = str(value or "").strip()
    if text.startswith("^"):
        return []
    items = [_HCA_ITEM.fullmatch(item) for item in text.lstrip("=").split(",")]
    return [(match.group(1), match.group(2) or "") for match in items if match]


def probe(ctx, host) -> dict:
    """The topology file (an absolute path: a relative one is the filter's problem) and stand-in HCAs."""
    settings = _settings(ctx, host)
    if settings is None:
        return {}
    topo, sysfs = _topo_file(settings), _sysfs(ctx, host)
    request = {"paths": [topo]} if topo.startswith("/") else {}
    if "NCCL_IB_HCA" in settings and sysfs != SYSFS:
        request["hca_roots"] = [sysfs]
    return request


def _node_hcas(ctx, host, settings: dict) -> dict | None:
    """{hca: [ports]} for nccl_conf_problems; None (not checked) without NCCL_IB_HCA or an answer."""
    if "NCCL_IB_HCA" not in settings:
        return None
    answer, sysfs = _probe(ctx, host), _sysfs(ctx, host)
    found = answer.get("hcas") if sysfs == SYSFS else (answer.get("hcas_at") or {}).get(sysfs)
    if not isinstance(found, dict):
        return None
    # The probe's {hca: ['1']} as the sysfs paths nccl_hca_ports reads (it drops what is not a port);
    # an HCA without ports is still an HCA.
    hcas = {name: [] for name in found}
    hcas.update(nccl_hca_ports([f"{sysfs}/{name}/ports/{port}" for name, ports in found.items()
                                if isinstance(ports, (list, tuple)) for port in ports]))
    return hcas


def _node_interfaces(ctx, host) -> list[str] | None:
    """The node's interface names (the probe's, else the facts'), None when neither is known."""
    probed = _probe(ctx, host).get("interfaces")
    if isinstance(probed, dict):
        return sorted(str(name) for name in probed)
    facts = ctx.fact(host, "interfaces")
    return sorted(str(name) for name in facts) if isinstance(facts, (list, tuple, dict)) else None


def _source(ctx, host, key: str) -> tuple[str, object]:
    """The variable that sets a key of nccl_conf_settings and its value: nccl_conf_overrides.KEY
    where the overrides set it, else the profile's variable (NCCL_IB_TC: nccl_ib_tc)."""
    for name, value in _overrides(ctx, host).items():
        if str(name) == key:
            return f"nccl_conf_overrides.{key}", value
    variable = "nccl_" + key[5:].lower() if key.startswith("NCCL_") else "nccl_conf_overrides"
    return variable, ctx.var(host, variable)


def _version(ctx):
    """'Refuse an NCCL version that is not a package version'."""
    for host in ctx.hosts:
        version, cuda = ctx.var(host, "nccl_version"), ctx.var(host, "nccl_cuda_version")
        package = f"the package version is {version}+cuda{cuda}"
        if ctx.has(host, "nccl_version") and not _VERSION.fullmatch(str(version)):
            yield Problem("nccl_version", version, f"must look like 2.18.3-1 (release and revision; {package})", host)
        if ctx.has(host, "nccl_cuda_version") and not _CUDA.fullmatch(str(cuda)):
            yield Problem("nccl_cuda_version", cuda, f"must look like 12.1 (CUDA major.minor; {package})", host)


def _rdma_hcas(ctx):
    """'Refuse an RDMA profile without HCAs'."""
    for host in ctx.hosts:
        fabric, hcas = ctx.var(host, "nccl_fabric"), ctx.var(host, "nccl_ib_hca")
        if fabric in RDMA_FABRICS and ctx.has(host, "nccl_ib_hca") and not hcas:
            yield Problem("nccl_ib_hca", hcas, f"empty, but nccl_fabric is {fabric}: list the HCAs NCCL should use "
                          "(e.g. [mlx5_0:1, mlx5_1:1]), or choose nccl_fabric ethernet", host)


def _socket_ifname(ctx):
    """'Refuse an ethernet profile without an interface' (no default route to take it from)."""
    for host in ctx.hosts:
        if _no_route(ctx, host):
            yield Problem("nccl_socket_ifname", "", "empty, and the node has no default route to derive "
                          "NCCL_SOCKET_IFNAME from: set nccl_socket_ifname (e.g. \"=ens1f0\")", host)


def _topology_file(ctx):
    """'Refuse a topology file the node does not have' (the probe's paths; no answer: not judged)."""
    for host in ctx.hosts:
        settings = _settings(ctx, host)
        topo = _topo_file(settings) if settings is not None else ""
        paths = _probe(ctx, host).get("paths")
        if not topo.startswith("/") or not isinstance(paths, dict) or paths.get(topo, True):
            continue
        variable, value = _source(ctx, host, "NCCL_TOPO_FILE")
        yield Problem(variable, value, f"NCCL_TOPO_FILE {topo} does not exist on the node", host)


def _checked_settings(ctx, host, settings: dict) -> dict:
    """The settings the filter checks: without the profile's keys whose variable is already reported
    (refused by the argument spec, absent from ctx.values) or has no default route to derive it."""
    kept = {}
    for key, value in settings.items():
        variable = _source(ctx, host, str(key))[0]
        if variable.startswith("nccl_conf_overrides") or ctx.has(host, variable):
            kept[key] = value
    if _no_route(ctx, host):
        kept.pop("NCCL_SOCKET_IFNAME", None)
    return kept


def _conf_problem(ctx, host, message: str, settings: dict) -> Problem:
    """One message of the filter as a problem of the variable that sets the first key it names."""
    named = []
    for key in map(str, settings):
        found = re.search(rf"(?<![A-Za-z0-9_]){re.escape(key)}(?![A-Za-z0-9_])", message)
        if found:
            named.append((found.start(), _source(ctx, host, key)))
    sources = [source for _key, source in sorted(named, key=lambda item: item[0])]
    variable, value = sources[0] if sources else ("nccl_conf_overrides", _overrides(ctx, host))
    also = [name for name, _value in sources[1:] if name != variable]
    return Problem(variable, value, message + (f" (fix {' or '.join([variable] + also)})" if also else ""), host)


def _conf(ctx):
    """'Refuse unknown NCCL variables, bad values, and interfaces or HCAs the node does not have'."""
    for host in ctx.hosts:
        settings = _settings(ctx, host)
        if settings is None:
            continue
        settings = _checked_settings(ctx, host, settings)
        try:
            messages = nccl_conf_problems(settings, _node_interfaces(ctx, host), _node_hcas(ctx, host, settings))
        except (TypeError, ValueError) as exc:  # e.g. int() of a 5000-digit override
            yield Problem("nccl_conf_overrides", _overrides(ctx, host), f"values NCCL cannot read ({exc})", host)
            continue
        for message in messages:
            yield _conf_problem(ctx, host, message, settings)


RULES = (_version, _rdma_hcas, _socket_ifname, _topology_file, _conf)
