# -*- coding: utf-8 -*-
# Copyright: Lockstep contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpu_facts' storage section: NFS entries of fstab, live NFS mounts and NFS
exports (plugins/module_utils/storage.py), through analyse(), components()
and the drift analysis. The inputs below are written for these tests in the
formats of fstab(5), proc(5) mounts, exports(5) and ganesha-export-config(8)."""

from __future__ import annotations

import json

import pytest
from ansible_collections.lockstep.gpu.plugins.module_utils.analyse import analyse
from ansible_collections.lockstep.gpu.plugins.module_utils.bundle import STORAGE, empty_raw, is_bundle_file
from ansible_collections.lockstep.gpu.plugins.module_utils.parsing import ParseError
from ansible_collections.lockstep.gpu.plugins.module_utils.storage import (
    build_storage,
    ganesha_exports,
    kernel_exports,
    nfs_entries,
    parse_storage,
)
from ansible_collections.lockstep.gpu.plugins.plugin_utils.components import components
from ansible_collections.lockstep.gpu.plugins.plugin_utils.drift import drift

FSTAB = """# /etc/fstab: static file system information.
UUID=0a1b / ext4 errors=remount-ro 0 1
sl1:/srv/shared /shared nfs nfsvers=4.2,hard 0 0
nas1:/volume1/my\\040data /data nfs4 ro 0 0
"""
MOUNTS = """/dev/vda / ext4 rw,relatime 0 0
sl1:/srv/shared /shared nfs4 rw,relatime,vers=4.2,hard,proto=tcp,addr=10.231.9.11 0 0
"""
GANESHA = """# a comment with EXPORT { Path = /nope; }
NFS_CORE_PARAM { Protocols = 4; }
EXPORT {
    Export_Id = 1;
    Path = "/srv/shared";
    Pseudo = "/srv/shared";
    CLIENT {
        Clients = 10.231.9.11, 10.231.9.12;
        Access_Type = RW;
    }
    CLIENT { Clients = 10.231.9.13; }
    FSAL { Name = VFS; }
}
"""


def files(tmp_path, **texts):
    paths = {}
    for name in ("fstab", "mounts", "exports", "ganesha"):
        path = tmp_path / name
        if name in texts:
            path.write_text(texts[name])
        paths[name] = str(path)
    return dict(fstab=paths["fstab"], mounts=paths["mounts"], exports=(paths["exports"],),
                ganesha_conf=paths["ganesha"])


def test_nfs_lines_only_with_escaped_spaces():
    assert nfs_entries(FSTAB) == {
        "/shared": {"source": "sl1:/srv/shared", "fstype": "nfs", "options": "nfsvers=4.2,hard"},
        "/data": {"source": "nas1:/volume1/my data", "fstype": "nfs4", "options": "ro"},
    }


def test_exports_of_both_servers():
    assert kernel_exports("/srv/shared 10.0.0.1(rw,sync) 10.0.0.2(rw) \\\n  host3\n# x\n") == [
        {"path": "/srv/shared", "server": "nfs-kernel-server", "clients": ["10.0.0.1", "10.0.0.2", "host3"]}]
    assert ganesha_exports(GANESHA) == [
        {"path": "/srv/shared", "server": "nfs-ganesha", "clients": ["10.231.9.11", "10.231.9.12", "10.231.9.13"]}]


def test_client_node_configured_and_mounted(tmp_path):
    text, problem = build_storage(**files(tmp_path, fstab=FSTAB, mounts=MOUNTS), running=lambda: True)
    assert problem is None and is_bundle_file(STORAGE)
    data = json.loads(text)
    assert data["exports"] == [] and data["server_running"] is False  # no export: not asked
    assert data["mounts"]["/shared"]["mounted"]["fstype"] == "nfs4"
    assert data["mounts"]["/data"]["mounted"] is None
    raw = empty_raw()
    raw[STORAGE] = text
    facts = analyse(raw)
    assert facts["storage"]["present"] is True
    flat = components(facts)
    assert {k: v for k, v in flat.items() if k.startswith("storage.")} == {
        "storage./shared.mounted": True,
        "storage./shared.fstype": "nfs4",
        "storage./shared.server": "sl1:/srv/shared",
        "storage./shared.fstab": "sl1:/srv/shared nfs nfsvers=4.2,hard",
        "storage./data.mounted": False,
        "storage./data.fstab": "nas1:/volume1/my data nfs4 ro",
    }


def test_server_export_is_a_fact_not_a_component(tmp_path):
    text = build_storage(**files(tmp_path, ganesha=GANESHA), running=lambda: True)[0]
    facts = analyse(dict(empty_raw(), **{STORAGE: text}))
    assert facts["storage"]["exports"][0]["server"] == "nfs-ganesha"
    assert facts["storage"]["server_running"] is True
    assert not [k for k in components(facts) if k.startswith("storage")]


def test_nothing_nfs_means_no_file_and_no_components(tmp_path):
    assert build_storage(**files(tmp_path, fstab="UUID=1 / ext4 defaults 0 1\n")) == (None, None)
    facts = analyse(empty_raw())
    assert facts["storage"] == {"present": False, "mounts": {}, "exports": [], "server_running": False}
    assert not [k for k in components(facts) if k.startswith("storage")]


def test_an_unreadable_source_is_a_named_problem(tmp_path):
    paths = files(tmp_path)
    (tmp_path / "fstab").mkdir()
    text, problem = build_storage(**paths, read=lambda p: (None, f"cannot read {p}: Permission denied")
                                  if p == paths["fstab"] else (None, None))
    assert text is None and problem == f"cannot read {paths['fstab']}: Permission denied"
    facts = analyse(dict(empty_raw(), **{STORAGE: "not json"}))
    assert facts["storage"]["error"].startswith("storage.json: not JSON")
    assert components(facts)["storage"] == {"error": facts["storage"]["error"]}


@pytest.mark.parametrize("text, message", [
    ("[]", "expected an object"),
    ('{"mounts": {"/x": {"fstab": null}}, "exports": [], "server_running": false}', "fstab and mounted"),
    ('{"mounts": {}, "exports": [{"path": "/x", "server": "samba", "clients": []}], "server_running": false}',
     "must be {path, server, clients}"),
])
def test_parse_refuses_what_the_collector_never_writes(text, message):
    with pytest.raises(ParseError, match=message):
        parse_storage(text)


def test_a_worker_without_the_mount_drifts_by_name(tmp_path):
    mounted = components(analyse(dict(empty_raw(), **{STORAGE: build_storage(
        **files(tmp_path, fstab=FSTAB, mounts=MOUNTS))[0]})))
    (tmp_path / "mounts").write_text("/dev/vda / ext4 rw 0 0\n")
    unmounted = components(analyse(dict(empty_raw(), **{STORAGE: build_storage(**files(tmp_path, fstab=FSTAB))[0]})))
    report = drift({"n1": mounted, "n2": mounted, "n3": unmounted})
    found = {(d["host"], d["component"], d["reason"]) for d in report["drifts"]}
    assert ("n3", "storage./shared.mounted", "differs") in found
    assert ("n3", "storage./shared.server", "missing") in found
    assert {d["host"] for d in report["drifts"]} == {"n3"}
