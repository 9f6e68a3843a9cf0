# -*- coding: utf-8 -*-
# Copyright: Lockstep contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parsers for the RDMA tools ``ibstat`` and ``ibv_devinfo``.

Both read the plain text the tools print (indented with tabs, or with
spaces when the output went through a terminal or a web page). Standard
library only: this runs on managed nodes.
"""

from __future__ import annotations

import re

from ansible_collections.lockstep.gpu.plugins.module_utils.parsing import ParseError, int_or_none, require_text

# Link layers ibstat and ibv_devinfo print (rdma-core: "InfiniBand",
# "Ethernet", "Unknown"). Anything else in the last field of a port is taken
# as a line cut short.
_LINK_LAYERS = ("InfiniBand", "Ethernet", "Unknown")


def _rate(value, where, source):
    """``Rate: 400`` -> 400, ``Rate: 2.5`` -> 2.5 (Gb/s)."""
    match = re.match(r"^(\d+(?:\.\d+)?)", value.strip())
    if match is None:
        raise ParseError("%s: unreadable rate %r" % (where, value), source)
    number = float(match.group(1))
    return int(number) if number.is_integer() else number


# --------------------------------------------------------------------------
# ibstat
# --------------------------------------------------------------------------

_CA_RE = re.compile(r"^CA:?\s+'([^']+)'\s*$")
_PORT_RE = re.compile(r"^Port\s+(\d+):\s*$")
_KV_RE = re.compile(r"^([A-Za-z][A-Za-z ]*?):\s*(.*?)\s*$")

_CA_KEYS = {
    "CA type": "ca_type",
    "Number of ports": "number_of_ports",
    "Firmware version": "firmware",
    "Hardware version": "hardware",
    "Node GUID": "node_guid",
    "System image GUID": "system_image_guid",
}
_PORT_KEYS = {
    "State": "state",
    "Physical state": "physical_state",
    "Rate": "rate",
    "Base lid": "base_lid",
    "LMC": "lmc",
    "SM lid": "sm_lid",
    "Capability mask": "capability_mask",
    "Port GUID": "port_guid",
    "Link layer": "link_layer",
}
_PORT_REQUIRED = ("state", "physical_state", "rate", "link_layer")


def _new_ca(name):
    ca = {"name": name, "ports": []}
    for key in _CA_KEYS.values():
        ca[key] = None
    return ca


def _new_port(number):
    port = {"port": number}
    for key in _PORT_KEYS.values():
        port[key] = None
    return port


def _check_ports(ports, required, where, source, layer_label):
    """Raise when a port lacks a required field or names an unknown link layer."""
    for port in ports:
        missing = [k for k in required if port.get(k) is None]
        if missing:
            raise ParseError(
                "%s port %d lacks %s; the output is truncated"
                % (where, port["port"], ", ".join(missing)),
                source,
            )
        if port["link_layer"] not in _LINK_LAYERS:
            raise ParseError(
                "%s port %d: unknown %s %r (line cut short?)"
                % (where, port["port"], layer_label, port["link_layer"]),
                source,
            )


def _check_ibstat_ca(ca, source):
    where = "CA %s" % ca["name"]
    if not ca["ports"]:
        raise ParseError("%s has no 'Port N:' block; the output is truncated" % where, source)
    declared = ca["number_of_ports"]
    if declared is not None and len(ca["ports"]) != declared:
        raise ParseError(
            "%s declares %d port(s) but %d are listed; the output is truncated"
            % (where, declared, len(ca["ports"])),
            source,
        )
    _check_ports(ca["ports"], _PORT_REQUIRED, where, source, "link layer")


def parse_ibstat(text, source=None):
    """Parse ``ibstat`` output.

    Returns ``{"cas": [{"name", "ca_type", "number_of_ports", "firmware",
    "hardware", "node_guid", "system_image_guid", "ports": [{"port",
    "state", "physical_state", "rate", "base_lid", "lmc", "sm_lid",
    "capability_mask", "port_guid", "link_layer"}]}]}``. ``rate`` is in Gb/s
    (int, or float for rates such as 2.5); LIDs are ints (``None`` when the
    line is absent). A CA whose ports are missing or incomplete raises
    ``ParseError``.
    """
    text = require_text(text, source, "ibstat output")
    cas = []
    ca = port = None
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        match = _CA_RE.match(line)
        if match:
            ca = _new_ca(match.group(1))
            cas.append(ca)
            port = None
            continue
        if ca is None:
            continue  # ibwarn/ibpanic noise before the first CA
        match = _PORT_RE.match(line)
        if match:
            port = _new_port(int(match.group(1)))
            ca["ports"].append(port)
            continue
        match = _KV_RE.match(line)
        if not match:
            continue
        key, value = match.group(1), match.group(2)
        if port is not None and key in _PORT_KEYS:
            field = _PORT_KEYS[key]
            where = "CA %s port %d" % (ca["name"], port["port"])
            if field == "rate":
                port[field] = _rate(value, where, source)
            elif field in ("base_lid", "lmc", "sm_lid"):
                port[field] = int_or_none(value)
            else:
                port[field] = value
        elif port is None and key in _CA_KEYS:
            field = _CA_KEYS[key]
            if field == "number_of_ports":
                count = int_or_none(value)
                if count is None:
                    raise ParseError(
                        "CA %s: unreadable 'Number of ports: %s'" % (ca["name"], value),
                        source,
                    )
                ca[field] = count
            else:
                ca[field] = value
    if not cas:
        raise ParseError("no \"CA '<name>'\" block found; is this ibstat output?", source)
    for each in cas:
        _check_ibstat_ca(each, source)
    return {"cas": cas}


# --------------------------------------------------------------------------
# ibv_devinfo
# --------------------------------------------------------------------------

_HCA_RE = re.compile(r"^hca_id:\s*(\S+)\s*$")
_DEVINFO_PORT_RE = re.compile(r"^port:\s*(\d+)\s*$")
_DEVINFO_KV_RE = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*):\s*(.*?)\s*$")

_HCA_INT_KEYS = ("vendor_part_id", "phys_port_cnt")
_HCA_KEYS = (
    "transport",
    "fw_ver",
    "node_guid",
    "sys_image_guid",
    "vendor_id",
    "vendor_part_id",
    "hw_ver",
    "board_id",
    "phys_port_cnt",
)
_DEVINFO_PORT_KEYS = (
    "state",
    "max_mtu",
    "active_mtu",
    "sm_lid",
    "port_lid",
    "port_lmc",
    "link_layer",
    "active_width",
    "active_speed",
    "phys_state",
)


def _strip_code(value):
    """``PORT_ACTIVE (4)`` -> ``PORT_ACTIVE``, ``4096 (5)`` -> ``4096``."""
    return re.sub(r"\s*\(\d+\)$", "", value.strip())


def _check_hca(hca, is_last, source):
    where = "HCA %s" % hca["hca_id"]
    ports = hca["ports"]
    if not ports:
        raise ParseError("%s lists no 'port:' block; the output is truncated" % where, source)
    _check_ports(ports, ("state", "link_layer"), where, source, "link_layer")
    declared = hca["phys_port_cnt"]
    numbers = [p["port"] for p in ports]
    if declared is not None and len(numbers) > declared:
        raise ParseError(
            "%s lists %d ports but phys_port_cnt is %d" % (where, len(numbers), declared),
            source,
        )
    # "ibv_devinfo -i N" lists one port of several, so fewer ports is normal;
    # only ports 1..k (k < phys_port_cnt) on the last HCA look like a cut.
    if (
        is_last
        and declared is not None
        and len(numbers) < declared
        and numbers == list(range(1, len(numbers) + 1))
    ):
        raise ParseError(
            "%s has phys_port_cnt %d but only port(s) %s are listed; the output is "
            "truncated" % (where, declared, ", ".join(str(n) for n in numbers)),
            source,
        )


def parse_ibv_devinfo(text, source=None):
    """Parse ``ibv_devinfo`` output (plain or ``-v``).

    Returns ``{"hcas": [{"hca_id", "transport", "fw_ver", "node_guid",
    "sys_image_guid", "vendor_id", "vendor_part_id", "hw_ver", "board_id",
    "phys_port_cnt", "ports": [{"port", "state", "max_mtu", "active_mtu",
    "sm_lid", "port_lid", "port_lmc", "link_layer", ...}]}]}``. ``state`` and
    ``phys_state`` lose their numeric code (``PORT_ACTIVE``); MTUs and LIDs
    are ints. Verbose-only port fields (``active_width``, ``active_speed``,
    ``phys_state``) are kept when present.
    """
    text = require_text(text, source, "ibv_devinfo output")
    hcas = []
    hca = port = None
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        match = _HCA_RE.match(line)
        if match:
            hca = {"hca_id": match.group(1)}
            for key in _HCA_KEYS:
                hca[key] = None
            hca["ports"] = []
            hcas.append(hca)
            port = None
            continue
        if hca is None:
            continue
        match = _DEVINFO_PORT_RE.match(line)
        if match:
            port = {"port": int(match.group(1))}
            for key in _DEVINFO_PORT_KEYS:
                port[key] = None
            hca["ports"].append(port)
            continue
        match = _DEVINFO_KV_RE.match(line)
        if not match:
            continue  # flag lists, "Device ports:", GID lines and the like
        key, value = match.group(1), match.group(2)
        if port is not None:
            if key not in _DEVINFO_PORT_KEYS:
                continue
            value = _strip_code(value)
            if key in ("max_mtu", "active_mtu", "sm_lid", "port_lid"):
                number = int_or_none(value)
                port[key] = number if number is not None else value
            else:
                port[key] = value
        elif key in _HCA_KEYS:
            if key in _HCA_INT_KEYS:
                number = int_or_none(value)
                if number is None:
                    raise ParseError(
                        "HCA %s: unreadable %s %r" % (hca["hca_id"], key, value), source
                    )
                hca[key] = number
            else:
                hca[key] = _strip_code(value)
    if not hcas:
        raise ParseError("no 'hca_id:' line found; is this ibv_devinfo output?", source)
    for index, each in enumerate(hcas):
        _check_hca(each, index == len(hcas) - 1, source)
    return {"hcas": hcas}
