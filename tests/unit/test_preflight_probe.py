"""lockstep.gpu.preflight_probe's readers, on files laid out as the kernel lays them out."""

from __future__ import annotations

from ansible_collections.lockstep.gpu.plugins.module_utils import preflight_probe as probe

# /proc/net/tcp and tcp6 as Linux 6.1 writes them (proc(5)): sshd on 0.0.0.0:22 and [::]:22 listening (0A),
# one established connection (01) that is not a listener.
TCP = """  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000:0016 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1 0 100 0 0 10 0
   1: 0200580A:0016 0100580A:D2F0 01 00000000:00000000 02:0009B2E5 00000000     0        0 2 1 0 20 4 30 10 -1
"""
TCP6 = """  sl  local_address                         remote_address                        st tx_queue rx_queue
   0: 00000000000000000000000000000000:0016 00000000000000000000000000000000:0000 0A 00000000:00000000
"""
# A bound UDP socket (07) on 127.0.0.1:323 (chronyd).
UDP = """  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode ref pointer drops
  1: 0100007F:0143 00000000:0000 07 00000000:00000000 00:00000000 00000000     0        0 3 2 0 0
"""


def test_listening_sockets_are_read_from_proc_net(tmp_path):
    (tmp_path / "tcp").write_text(TCP)
    (tmp_path / "tcp6").write_text(TCP6)
    (tmp_path / "udp").write_text(UDP)
    assert probe.listening(str(tmp_path), owners={}) == [
        {"proto": "tcp", "address": "0.0.0.0", "port": 22, "process": ""},
        {"proto": "tcp", "address": "::", "port": 22, "process": ""},
        {"proto": "udp", "address": "127.0.0.1", "port": 323, "process": ""},
    ]


def test_each_socket_is_named_after_the_process_that_holds_it(tmp_path):
    (tmp_path / "tcp").write_text(TCP)
    inode = TCP.splitlines()[1].split()[9]
    named = probe.listening(str(tmp_path), owners={inode: "sshd"})
    assert named[0] == {"proto": "tcp", "address": "0.0.0.0", "port": 22, "process": "sshd"}


def test_socket_owners_reads_each_process_s_descriptors(tmp_path):
    for pid, comm, links in (("7", "sshd", ["socket:[100]", "/dev/null"]), ("12", "python3", ["socket:[100]", "socket:[200]"])):
        (tmp_path / pid / "fd").mkdir(parents=True)
        (tmp_path / pid / "comm").write_text(comm + "\n")
        for fd, target in enumerate(links):
            (tmp_path / pid / "fd" / str(fd)).symlink_to(target)
    (tmp_path / "self").mkdir()
    assert probe.socket_owners(str(tmp_path)) == {"100": "sshd", "200": "python3"}


def test_interfaces_and_hcas_are_read_from_sysfs(tmp_path):
    eth0 = tmp_path / "net" / "eth0"
    eth0.mkdir(parents=True)
    (eth0 / "mtu").write_text("9000\n")
    (eth0 / "operstate").write_text("up\n")
    (eth0 / "speed").write_text("-1\n")
    assert probe.interfaces(str(tmp_path / "net"), {"eth0": ["10.0.0.1"]}) == {
        "eth0": {"mtu": 9000, "addresses": ["10.0.0.1"], "up": True, "speed": None}}
    for port in ("1", "2"):
        (tmp_path / "ib" / "mlx5_0" / "ports" / port).mkdir(parents=True)
    assert probe.hcas(str(tmp_path / "ib")) == {"mlx5_0": ["1", "2"]}
    assert probe.hcas(str(tmp_path / "none")) == {}


def test_ip_json_gives_each_interface_its_addresses():
    ip_json = [{"ifname": "lo", "addr_info": [{"local": "127.0.0.1"}, {"local": "::1"}]},
               {"ifname": "eth0", "addr_info": [{"local": "10.88.0.2"}]}, {"ifname": "ib0", "addr_info": []}]
    assert probe.interface_addresses(ip_json) == {"lo": ["127.0.0.1", "::1"], "eth0": ["10.88.0.2"], "ib0": []}


def test_a_file_over_the_limit_or_absent_is_answered_none(tmp_path, monkeypatch):
    small = tmp_path / "small"
    small.write_text("en_US.UTF-8 UTF-8\n")
    monkeypatch.setattr(probe, "READ_LIMIT", 4)
    assert probe.answer({"read": [str(small), str(tmp_path / "absent")], "paths": [str(small)]})["read"] == {
        str(small): None, str(tmp_path / "absent"): None}
