"""openpgp: armour, packets, v4 fingerprints and exporting one key, on real public keys.

The keys are in tests/fixtures/openpgp (sources and licences in SOURCES.md).
The expected fingerprints below are what ``gpg --show-keys --with-colons``
printed for them; where gpg is installed the tests ask it again, and also read
back every keyring the module exports.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from ansible_collections.lockstep.gpu.plugins.module_utils import openpgp
from ansible_collections.lockstep.gpu.plugins.module_utils.openpgp import OpenPGPError

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "openpgp"
DEBIAN = FIXTURES / "debian-archive-keyring.gpg"
DOCKER = FIXTURES / "docker-linux-debian-gpg.asc"
NVIDIA = FIXTURES / "nvidia-libnvidia-container-gpgkey.asc"
GPG = shutil.which("gpg")
needs_gpg = pytest.mark.skipif(GPG is None, reason="gpg is not installed: nothing to cross-check the fingerprints with")

DOCKER_FPR = "9DC858229FC7DD38854AE2D88D81803C0EBFCD88"
DOCKER_SUB = "D3306A018370199E527AE7997EA0A9C3F273FCD8"
NVIDIA_FPR = "C95B321B61E88C1809C4F759DDCAE044F796ECB0"
# gpg --show-keys --with-colons debian-archive-keyring.gpg: (primary, [subkeys]) in file order.
DEBIAN_KEYS = [
    ("1F89983E0081FDE018F3CC9673A4F27B8DD47936", ["A7236886F3CCCAAD148A27F80E98404D386FA1D9"]),
    ("AC530D520F2F3269F5E98313A48449044AAD5C5D", ["ED541312A33F1128F10B1C6C54404762BBB6E853"]),
    ("A4285295FC7B1A81600062A9605C66F00D6C9793", []),
    ("4D64FEC119C2029067D6E791F8D2585B8783D481", []),
    ("B8B80B5B623EAB6AD8775C45B7C5D7D6350947F8", ["4CB50190207B4758A3F73A796ED0E7B82643E131"]),
    ("05AB90340C0C5E797F44A8C8254CF3B5AEC0A8F0", ["B0CAB9266E8C3929798B3EEEBDE6D2B9216EC7A8"]),
    ("04B54C3CDCA79751B16BC6B5225629DF75B188BD", ["B8E5F13176D2A7A75220028078DBA3BC47EF2265"]),
    ("5E04A1E3223A19A20706E20F9904613D4CCE68C6", ["89C87ACEA5DD6B8E6A7068808E9F831205B4BA95"]),
    ("41587F7DB8C774BCCF131416762F67A0B2C39DE4", []),
]


def gpg_keys(tmp_path: Path, data: bytes) -> list:
    """[(fingerprint, [uids], [subkey fingerprints])] as gpg --show-keys reads ``data``."""
    home = tmp_path / "gnupg-show"
    home.mkdir(mode=0o700, exist_ok=True)
    keyfile = tmp_path / "show.key"
    keyfile.write_bytes(data)
    done = subprocess.run([GPG, "--homedir", str(home), "--batch", "--show-keys", "--with-colons", str(keyfile)],
                          capture_output=True, check=True)
    keys, last = [], None
    for line in done.stdout.decode("utf-8").splitlines():
        fields = line.split(":")
        if fields[0] in ("pub", "sub"):
            last = fields[0]
            if last == "pub":
                keys.append([None, [], []])
        elif fields[0] == "fpr" and last == "pub":
            keys[-1][0], last = fields[9], None
        elif fields[0] == "fpr" and last == "sub":
            keys[-1][2].append(fields[9])
            last = None
        elif fields[0] == "uid":
            keys[-1][1].append(re.sub(r"\\x([0-9a-f]{2})", lambda m: chr(int(m.group(1), 16)), fields[9]))
    return [tuple(key) for key in keys]


def ours(data: bytes, source="test") -> list:
    return [(k.fingerprint, k.uids, k.subkey_fingerprints) for k in openpgp.read_keys(data, source)]


def reframe(packets, style: str) -> bytes:
    """The same packets with other headers: new format ('new', 'new5') or old format."""
    out = []
    for index, packet in enumerate(packets):
        body, tag = packet.body, packet.tag
        if style == "new":
            if len(body) < 192:
                length = bytes([len(body)])
            elif len(body) < 8384:
                value = len(body) - 192
                length = bytes([(value >> 8) + 192, value & 0xFF])
            else:
                length = b"\xff" + len(body).to_bytes(4, "big")
            out.append(bytes([0xC0 | tag]) + length + body)
        elif style == "new5":
            out.append(bytes([0xC0 | tag]) + b"\xff" + len(body).to_bytes(4, "big") + body)
        elif style == "old-indeterminate" and index == len(packets) - 1:
            out.append(bytes([0x80 | tag << 2 | 3]) + body)
        else:  # old format, the smallest length field; "old4" forces four bytes
            size = 4 if style == "old4" else 1 if len(body) < 256 else 2 if len(body) < 65536 else 4
            out.append(bytes([0x80 | tag << 2 | {1: 0, 2: 1, 4: 2}[size]]) + len(body).to_bytes(size, "big") + body)
    return b"".join(out)


# --------------------------------------------------------------------------
# Fingerprints, user IDs, subkeys
# --------------------------------------------------------------------------
def test_debian_keyring_holds_the_recorded_keys():
    keys = openpgp.read_key_file(str(DEBIAN))
    assert [(k.fingerprint, k.subkey_fingerprints) for k in keys] == DEBIAN_KEYS
    assert keys[3].uids == ["Debian Stable Release Key (12/bookworm) <debian-release@lists.debian.org>"]
    assert (keys[3].algorithm, keys[0].algorithm) == ("EdDSA", "RSA")
    assert keys[0].key_id == "73A4F27B8DD47936"


@pytest.mark.parametrize("path, fingerprint, uid, subkey", [
    (DOCKER, DOCKER_FPR, "Docker Release (CE deb) <docker@docker.com>", DOCKER_SUB),
    (NVIDIA, NVIDIA_FPR, "NVIDIA CORPORATION (Open Source Projects) <cudatools@nvidia.com>",
     "2041629BF5352FAC178A9B1F6ED91CA3AC1160CD"),
])
def test_armoured_vendor_keys(path, fingerprint, uid, subkey):
    (key,) = openpgp.read_key_file(str(path))
    assert (key.fingerprint, key.uids, key.subkey_fingerprints) == (fingerprint, [uid], [subkey])
    assert key.as_dict()["key_id"] == fingerprint[-16:]


@needs_gpg
@pytest.mark.parametrize("path", [DEBIAN, DOCKER, NVIDIA], ids=lambda p: p.name)
def test_fingerprints_uids_and_subkeys_match_gpg(tmp_path, path):
    data = path.read_bytes()
    assert ours(data) == gpg_keys(tmp_path, data)


@needs_gpg
@pytest.mark.parametrize("path", [DOCKER, NVIDIA], ids=lambda p: p.name)
def test_dearmor_gives_the_bytes_gpg_dearmor_gives(tmp_path, path):
    done = subprocess.run([GPG, "--homedir", str(tmp_path), "--batch", "--dearmor"], input=path.read_bytes(),
                          capture_output=True, check=True)
    assert openpgp.dearmor(path.read_bytes()) == done.stdout


def test_binary_input_passes_through():
    data = DEBIAN.read_bytes()
    assert openpgp.dearmor(data) == data


# --------------------------------------------------------------------------
# export_key
# --------------------------------------------------------------------------
@needs_gpg
@pytest.mark.parametrize("index", range(len(DEBIAN_KEYS)))
def test_export_from_the_debian_keyring_holds_only_the_declared_key(tmp_path, index):
    fingerprint, subkeys = DEBIAN_KEYS[index]
    exported = openpgp.export_key(DEBIAN.read_bytes(), fingerprint)
    (shown,) = gpg_keys(tmp_path, exported)
    assert shown[0] == fingerprint and shown[2] == subkeys


def test_exports_are_slices_of_the_file_and_together_the_whole_file():
    data = DEBIAN.read_bytes()
    parts = [openpgp.export_key(data, fingerprint) for fingerprint, _subkeys in DEBIAN_KEYS]
    assert b"".join(parts) == data
    assert all(part[0] & 0x80 and (part[0] >> 2) & 0x0F == openpgp.TAG_PUBLIC_KEY for part in parts)


def test_export_of_an_armoured_single_key_is_the_dearmored_file():
    data = DOCKER.read_bytes()
    assert openpgp.export_key(data, DOCKER_FPR) == openpgp.dearmor(data)


@needs_gpg
def test_two_armoured_blocks_in_one_file_yield_two_keys_and_export_one(tmp_path):
    data = DOCKER.read_bytes() + b"\n" + NVIDIA.read_bytes()
    assert [k.fingerprint for k in openpgp.read_keys(data)] == [DOCKER_FPR, NVIDIA_FPR]
    exported = openpgp.export_key(data, NVIDIA_FPR)
    assert [key[0] for key in gpg_keys(tmp_path, exported)] == [NVIDIA_FPR]


@pytest.mark.parametrize("written", [
    DOCKER_FPR.lower(),
    "9DC8 5822 9FC7 DD38 854A  E2D8 8D81 803C 0EBF CD88",
    " 9dc8 5822 9fc7 dd38 854a e2d8 8d81 803c 0ebf cd88\n",
    "0x" + DOCKER_FPR,
])
def test_fingerprints_compare_case_and_space_insensitively(written):
    assert openpgp.find_key(DOCKER.read_bytes(), written).fingerprint == DOCKER_FPR


def test_a_subkey_fingerprint_is_refused_naming_the_primary():
    with pytest.raises(OpenPGPError, match=f"{DOCKER_SUB} is a subkey of primary key {DOCKER_FPR}"):
        openpgp.export_key(DOCKER.read_bytes(), DOCKER_SUB, "https://download.docker.com/linux/debian/gpg")


def test_a_missing_fingerprint_names_every_key_in_the_file():
    with pytest.raises(OpenPGPError) as caught:
        openpgp.export_key(DEBIAN.read_bytes(), DOCKER_FPR, "debian-archive-keyring.gpg")
    message = str(caught.value)
    assert message.startswith(f"debian-archive-keyring.gpg: no key with fingerprint {DOCKER_FPR}; the file holds ")
    assert all(fingerprint in message for fingerprint, _subkeys in DEBIAN_KEYS)
    assert "(Debian Stable Release Key (12/bookworm) <debian-release@lists.debian.org>)" in message


def test_a_malformed_fingerprint_is_refused():
    with pytest.raises(OpenPGPError, match="not a v4 fingerprint"):
        openpgp.find_key(DOCKER.read_bytes(), "0EBFCD88")


def test_trust_packets_stay_out_of_the_export():
    binary = openpgp.dearmor(DOCKER.read_bytes())
    first = openpgp.parse_packets(binary)[0]
    trust = b"\xb0\x02\x00\x00"  # old-format trust packet (tag 12), as GnuPG 1 keyrings hold them
    with_trust = binary[:first.end] + trust + binary[first.end:]
    assert openpgp.export_key(with_trust, DOCKER_FPR) == binary


# --------------------------------------------------------------------------
# Packet formats and length encodings
# --------------------------------------------------------------------------
@pytest.mark.parametrize("style", ["new", "new5", "old4", "old-indeterminate"])
def test_every_length_encoding_gives_the_same_keys(style):
    packets = openpgp.parse_packets(DEBIAN.read_bytes())
    reframed = reframe(packets, style)
    assert reframed != DEBIAN.read_bytes()
    assert [(k.fingerprint, k.subkey_fingerprints) for k in openpgp.read_keys(reframed)] == DEBIAN_KEYS
    assert [p.body for p in openpgp.parse_packets(reframed)] == [p.body for p in packets]


@needs_gpg
@pytest.mark.parametrize("style", ["new", "new5", "old4"])
def test_gpg_reads_the_reframed_keyring_the_same_way(tmp_path, style):
    reframed = reframe(openpgp.parse_packets(DEBIAN.read_bytes()), style)
    assert [(fpr, subs) for fpr, _uids, subs in gpg_keys(tmp_path, reframed)] == DEBIAN_KEYS


def test_new_format_two_octet_lengths_are_decoded():
    # 192 and 8383 are the edges of the two-octet encoding.
    for size in (192, 1000, 8383):
        stream = reframe([openpgp.Packet(13, 0, 0, b"u" * size)], "new")
        assert stream[1] >= 192 and len(openpgp.parse_packets(stream)[0].body) == size


def test_partial_body_lengths_are_joined():
    body = bytes(range(256)) * 5                       # 1280 bytes
    last = len(body) - 768 - 192                       # the final part, a two-octet length
    stream = (b"\xcb" + b"\xe9" + body[:512]           # literal data packet (tag 11), partial 2**9
              + b"\xe8" + body[512:768]                # partial 2**8
              + bytes([(last >> 8) + 192, last & 0xFF]) + body[768:])
    (packet,) = openpgp.parse_packets(stream)
    assert (packet.tag, packet.body, packet.end) == (11, body, len(stream))


def test_a_marker_packet_is_skipped():
    marker = b"\xa8\x03PGP"
    assert ours(marker + DEBIAN.read_bytes())[0][0] == DEBIAN_KEYS[0][0]


# --------------------------------------------------------------------------
# Armour
# --------------------------------------------------------------------------
def test_crc24():
    assert openpgp.crc24(b"") == 0xB704CE
    assert openpgp.crc24(openpgp.dearmor(DOCKER.read_bytes())) == 0xD18621  # "=0YYh"


def test_a_wrong_checksum_is_refused():
    text = DOCKER.read_bytes().replace(b"\n=0YYh\n", b"\n=0YYi\n")
    with pytest.raises(OpenPGPError, match="armour checksum mismatch"):
        openpgp.read_keys(text, "docker.asc")


def test_damaged_key_text_is_caught_by_the_checksum():
    lines = DOCKER.read_bytes().split(b"\n")
    line = lines[10]
    lines[10] = line[:20] + (b"A" if line[20:21] != b"A" else b"B") + line[21:]
    with pytest.raises(OpenPGPError, match="armour checksum mismatch"):
        openpgp.read_keys(b"\n".join(lines))


def test_armour_without_checksum_crlf_and_indentation_is_read():
    text = DOCKER.read_bytes().replace(b"=0YYh\n", b"")
    assert ours(text)[0][0] == DOCKER_FPR
    indented = b"".join(b"    " + line + b"\r\n" for line in DOCKER.read_bytes().splitlines())
    assert ours(b"key: |\r\n" + indented)[0][0] == DOCKER_FPR


def test_armour_headers_are_skipped():
    text = DOCKER.read_bytes().replace(b"-----\n\n", b"-----\nVersion: GnuPG v1\nComment: test\n\n", 1)
    assert ours(text)[0][0] == DOCKER_FPR


@pytest.mark.parametrize("data, words", [
    (b"", "the file is empty"),
    (b"<html><body>404 Not Found</body></html>\n", "not an OpenPGP key: neither ASCII armour"),
    (b"-----BEGIN PGP SIGNATURE-----\n\nabcd\n-----END PGP SIGNATURE-----\n", "armour holds 'PGP SIGNATURE'"),
    (b"-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nabcd\n-----END PGP PRIVATE KEY BLOCK-----\n", "holds a secret key"),
])
def test_what_is_not_a_public_key_is_named(data, words):
    with pytest.raises(OpenPGPError, match=words):
        openpgp.read_keys(data, "key.asc")


def test_truncated_armour_is_refused():
    text = DOCKER.read_bytes().replace(b"-----END PGP PUBLIC KEY BLOCK-----\n", b"")
    with pytest.raises(OpenPGPError, match="truncated armour"):
        openpgp.read_keys(text)


def test_a_truncated_binary_keyring_is_refused():
    with pytest.raises(OpenPGPError, match=r"truncated packet: signature packet \(tag 2\) at byte offset 528 needs 590 "):
        openpgp.read_keys(DEBIAN.read_bytes()[:1000], "debian-archive-keyring.gpg")


def test_binary_data_that_is_no_packet_stream_is_refused():
    with pytest.raises(OpenPGPError, match="no packet header"):
        openpgp.read_keys(DEBIAN.read_bytes()[:528] + b"\x00" * 40)  # the first key packet, then zeros


def test_a_stream_that_starts_with_a_signature_is_refused():
    packets = openpgp.parse_packets(openpgp.dearmor(DOCKER.read_bytes()))
    signature = next(p for p in packets if p.tag == openpgp.TAG_SIGNATURE)
    with pytest.raises(OpenPGPError, match=r"the first packet is a signature packet \(tag 2\)"):
        openpgp.read_keys(reframe([signature], "old"))


def test_a_secret_key_packet_is_refused():
    # The Docker public key packet with the secret-key tag: enough to see the refusal.
    packets = openpgp.parse_packets(openpgp.dearmor(DOCKER.read_bytes()))
    secret = openpgp.Packet(openpgp.TAG_SECRET_KEY, 0, 0, packets[0].body)
    with pytest.raises(OpenPGPError, match=r"secret key packet \(tag 5\).*never a secret key"):
        openpgp.read_keys(reframe([secret] + packets[1:], "old"))


@pytest.mark.parametrize("version", [5, 6, 3])
def test_keys_other_than_v4_are_refused_clearly(version):
    packets = openpgp.parse_packets(openpgp.dearmor(DOCKER.read_bytes()))
    changed = openpgp.Packet(6, 0, 0, bytes([version]) + packets[0].body[1:])
    with pytest.raises(OpenPGPError, match=f"unsupported OpenPGP v{version} key.*only v4"):
        openpgp.read_keys(reframe([changed] + packets[1:], "old"))


def test_format_fingerprint():
    assert openpgp.format_fingerprint(DOCKER_FPR) == "9DC8 5822 9FC7 DD38 854A E2D8 8D81 803C 0EBF CD88"
    assert os.path.basename(str(DOCKER)) in (FIXTURES / "SOURCES.md").read_text()
