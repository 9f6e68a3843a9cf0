# -*- coding: utf-8 -*-
# Copyright: Lockstep contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Read OpenPGP public keys: armour, packets, v4 fingerprints, one key exported.

Standard library only: this runs on managed nodes (Python 3.9 and later).

What it does, after RFC 4880 (and RFC 9580 for the version numbers it refuses):

* ``dearmor`` turns ASCII armour (``-----BEGIN PGP PUBLIC KEY BLOCK-----``, or
  GnuPG's ``PGP ARMORED FILE``) into the binary packet stream, checking the CRC-24
  when the armour carries one; binary input passes through unchanged. A file may
  hold several armoured blocks; their packets are concatenated.
* ``parse_packets`` splits a packet stream (old and new packet formats, every
  length encoding, partial body lengths included).
* ``read_keys`` groups the packets into transferable public keys (a primary key
  packet and everything after it up to the next primary key packet) and computes
  the v4 fingerprint of each primary key and subkey: SHA-1 over 0x99, the two-byte
  body length and the public key packet body.
* ``export_key`` returns the binary transferable public key of exactly one primary
  key, chosen by fingerprint - what apt's ``Signed-By`` keyring should hold.

Every problem raises ``OpenPGPError`` with a message that names it.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re

# Packet tags (RFC 4880 section 4.3).
TAG_SIGNATURE = 2
TAG_SECRET_KEY = 5
TAG_PUBLIC_KEY = 6
TAG_SECRET_SUBKEY = 7
TAG_MARKER = 10
TAG_TRUST = 12
TAG_USER_ID = 13
TAG_PUBLIC_SUBKEY = 14
TAG_USER_ATTRIBUTE = 17

PACKET_NAMES = {
    1: "public-key encrypted session key", 2: "signature", 3: "symmetric-key encrypted session key",
    4: "one-pass signature", 5: "secret key", 6: "public key", 7: "secret subkey",
    8: "compressed data", 9: "symmetrically encrypted data", 10: "marker", 11: "literal data",
    12: "trust", 13: "user ID", 14: "public subkey", 17: "user attribute",
    18: "encrypted and integrity protected data", 19: "modification detection code", 20: "AEAD encrypted data",
    21: "padding",
}

ALGORITHMS = {
    1: "RSA", 2: "RSA (encrypt only)", 3: "RSA (sign only)", 16: "Elgamal", 17: "DSA", 18: "ECDH",
    19: "ECDSA", 22: "EdDSA", 25: "X25519", 26: "X448", 27: "Ed25519", 28: "Ed448",
}

ARMOUR_TYPES = ("PGP PUBLIC KEY BLOCK", "PGP ARMORED FILE")
_ARMOUR_BEGIN = re.compile(rb"^-----BEGIN (PGP [A-Z ,/0-9]+)-----[ \t]*$")
_ARMOUR_END = re.compile(rb"^-----END (PGP [A-Z ,/0-9]+)-----[ \t]*$")
_HEADER = re.compile(rb"^[A-Za-z0-9-]+: ")


class OpenPGPError(ValueError):
    """A key file that cannot be read, or a key that is not there."""


def packet_name(tag: int) -> str:
    return f"{PACKET_NAMES.get(tag, 'unknown')} packet (tag {tag})"


# --------------------------------------------------------------------------
# Armour
# --------------------------------------------------------------------------
def crc24(data: bytes) -> int:
    """The CRC-24 of RFC 4880 section 6.1."""
    crc = 0xB704CE
    for byte in data:
        crc ^= byte << 16
        for _bit in range(8):
            crc <<= 1
            if crc & 0x1000000:
                crc ^= 0x1864CFB
    return crc & 0xFFFFFF


def is_armoured(data: bytes) -> bool:
    return b"-----BEGIN PGP " in data[:4096] or data.lstrip()[:11] == b"-----BEGIN "


def _decode_block(kind: str, lines: list, first_line: int, source: str) -> bytes:
    body, checksum, index = [], None, 0
    # Armour headers ("Version: ...", "Comment: ...") end at the first blank line.
    # Some writers leave the blank line out; a line that is no header starts the data.
    while index < len(lines) and _HEADER.match(lines[index]):
        index += 1
    if index < len(lines) and not lines[index].strip():
        index += 1
    for offset, line in enumerate(lines[index:], start=first_line + index):
        line = line.strip()
        if not line:
            continue
        if line.startswith(b"=") and len(line) == 5:
            checksum = line[1:]
            continue
        if checksum is not None:
            raise OpenPGPError(f"{source}: malformed armour ({kind}): data after the checksum line, line {offset + 1}")
        body.append(line)
    try:
        data = base64.b64decode(b"".join(body), validate=True)
    except (binascii.Error, ValueError) as exc:
        raise OpenPGPError(f"{source}: malformed armour ({kind}): the base64 data does not decode ({exc})") from None
    if checksum is not None:
        try:
            expected = int.from_bytes(base64.b64decode(checksum, validate=True), "big")
        except (binascii.Error, ValueError):
            raise OpenPGPError(f"{source}: malformed armour ({kind}): unreadable checksum line "
                               f"'={checksum.decode('ascii', 'replace')}'") from None
        actual = crc24(data)
        if actual != expected:
            raise OpenPGPError(f"{source}: armour checksum mismatch ({kind}): the armour says CRC-24 "
                               f"{expected:06X}, the data has {actual:06X} - the key text is damaged")
    if not data:
        raise OpenPGPError(f"{source}: the armour block ({kind}) holds no data")
    return data


def dearmor(data: bytes, source: str = "key data") -> bytes:
    """The binary packet stream of ``data``: armour decoded, binary passed through."""
    if not data or not data.strip():
        raise OpenPGPError(f"{source}: not an OpenPGP key: the file is empty")
    if not is_armoured(data):
        if data[0] & 0x80:
            return data
        raise OpenPGPError(f"{source}: not an OpenPGP key: neither ASCII armour "
                           f"(-----BEGIN PGP PUBLIC KEY BLOCK-----) nor binary OpenPGP packets")
    lines = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n").split(b"\n")
    out, kind, start, block = [], None, 0, []
    for number, raw in enumerate(lines):
        line = raw.strip()
        if kind is None:
            begin = _ARMOUR_BEGIN.match(line)
            if begin:
                kind, start, block = begin.group(1).decode("ascii"), number + 1, []
                if kind not in ARMOUR_TYPES:
                    what = "a secret key" if "PRIVATE" in kind or "SECRET" in kind else f"'{kind}'"
                    raise OpenPGPError(f"{source}: not an OpenPGP public key: the armour holds {what} "
                                       f"(-----BEGIN {kind}-----)")
            continue
        end = _ARMOUR_END.match(line)
        if end:
            if end.group(1).decode("ascii") != kind:
                raise OpenPGPError(f"{source}: malformed armour: -----BEGIN {kind}----- ends with "
                                   f"-----END {end.group(1).decode('ascii')}-----")
            out.append(_decode_block(kind, block, start, source))
            kind = None
            continue
        block.append(line)
    if kind is not None:
        raise OpenPGPError(f"{source}: truncated armour: -----BEGIN {kind}----- has no -----END {kind}----- line")
    if not out:
        raise OpenPGPError(f"{source}: not an OpenPGP key: no -----BEGIN PGP PUBLIC KEY BLOCK----- line")
    return b"".join(out)


# --------------------------------------------------------------------------
# Packets
# --------------------------------------------------------------------------
class Packet:
    """One packet: its tag, where it starts and ends in the stream, and its body."""

    __slots__ = ("tag", "start", "end", "body")

    def __init__(self, tag: int, start: int, end: int, body: bytes):
        self.tag, self.start, self.end, self.body = tag, start, end, body

    def __repr__(self):
        return f"Packet(tag={self.tag}, start={self.start}, end={self.end}, body={len(self.body)} bytes)"


def _need(data: bytes, pos: int, count: int, what: str, start: int, source: str) -> bytes:
    if pos + count > len(data):
        raise OpenPGPError(f"{source}: truncated packet: {what} at byte offset {start} needs {count} "
                           f"more bytes at offset {pos}, only {len(data) - pos} remain")
    return data[pos:pos + count]


def _new_length(data: bytes, pos: int, what: str, start: int, source: str):
    """(length, header bytes, partial?) of a new-format length at ``pos``."""
    first = _need(data, pos, 1, what, start, source)[0]
    if first < 192:
        return first, 1, False
    if first < 224:
        second = _need(data, pos + 1, 1, what, start, source)[0]
        return ((first - 192) << 8) + second + 192, 2, False
    if first == 255:
        return int.from_bytes(_need(data, pos + 1, 4, what, start, source), "big"), 5, False
    return 1 << (first & 0x1F), 1, True


def parse_packets(data: bytes, source: str = "key data") -> list:
    """Split a binary packet stream into packets."""
    packets, pos = [], 0
    while pos < len(data):
        start, ctb = pos, data[pos]
        if not ctb & 0x80:
            raise OpenPGPError(f"{source}: not OpenPGP data: byte {ctb:#04x} at offset {start} is no packet header")
        if ctb & 0x40:                       # new format
            tag = ctb & 0x3F
            what = packet_name(tag)
            pos += 1
            chunks = []
            while True:
                length, size, partial = _new_length(data, pos, what, start, source)
                pos += size
                chunks.append(_need(data, pos, length, what, start, source))
                pos += length
                if not partial:
                    break
            body = b"".join(chunks)
        else:                                # old format
            tag, length_type = (ctb >> 2) & 0x0F, ctb & 0x03
            what = packet_name(tag)
            pos += 1
            if length_type == 3:             # indeterminate: to the end of the data
                length = len(data) - pos
            else:
                size = (1, 2, 4)[length_type]
                length = int.from_bytes(_need(data, pos, size, what, start, source), "big")
                pos += size
            body = _need(data, pos, length, what, start, source)
            pos += length
        packets.append(Packet(tag, start, pos, body))
    return packets


# --------------------------------------------------------------------------
# Keys
# --------------------------------------------------------------------------
def normalize_fingerprint(text: str) -> str:
    """Upper case, without spaces, colons or a leading 0x."""
    value = re.sub(r"[\s:]", "", str(text or ""))
    if value[:2].lower() == "0x":
        value = value[2:]
    return value.upper()


def format_fingerprint(fingerprint: str) -> str:
    """``EB69 3B30 ...`` in blocks of four, as gpg prints it."""
    return " ".join(fingerprint[i:i + 4] for i in range(0, len(fingerprint), 4))


def key_fingerprint(body: bytes, source: str = "key data", what: str = "public key") -> str:
    """The v4 fingerprint of a public key or subkey packet body."""
    if not body:
        raise OpenPGPError(f"{source}: empty {what} packet")
    version = body[0]
    if version in (5, 6):
        raise OpenPGPError(f"{source}: unsupported OpenPGP v{version} key ({what}): only v4 keys "
                           f"(RFC 4880, 40-hex-digit SHA-1 fingerprints) are supported")
    if version in (2, 3):
        raise OpenPGPError(f"{source}: unsupported OpenPGP v{version} key ({what}): legacy v3 keys have MD5 "
                           f"fingerprints that apt no longer accepts; only v4 keys are supported")
    if version != 4:
        raise OpenPGPError(f"{source}: unknown OpenPGP key version {version} ({what})")
    if len(body) < 6:
        raise OpenPGPError(f"{source}: truncated {what} packet: {len(body)} bytes, a v4 key needs at least 6")
    if len(body) > 0xFFFF:
        raise OpenPGPError(f"{source}: {what} packet of {len(body)} bytes is too long for a v4 fingerprint")
    return hashlib.sha1(b"\x99" + len(body).to_bytes(2, "big") + body).hexdigest().upper()


class Subkey:
    __slots__ = ("fingerprint", "algorithm", "created")

    def __init__(self, fingerprint: str, algorithm: str, created: int):
        self.fingerprint, self.algorithm, self.created = fingerprint, algorithm, created

    @property
    def key_id(self) -> str:
        return self.fingerprint[-16:]


class PrimaryKey:
    """A transferable public key: the primary key and the packets that belong to it."""

    def __init__(self, fingerprint: str, algorithm: str, created: int, packets: list, stream: bytes):
        self.fingerprint, self.algorithm, self.created = fingerprint, algorithm, created
        self.packets = packets
        self.uids, self.subkeys = [], []
        self._stream = stream

    @property
    def key_id(self) -> str:
        return self.fingerprint[-16:]

    @property
    def subkey_fingerprints(self) -> list:
        return [sub.fingerprint for sub in self.subkeys]

    def transferable(self) -> bytes:
        """The binary key: every packet from the primary key packet up to the next one,
        the original bytes, without local trust packets."""
        return b"".join(self._stream[p.start:p.end] for p in self.packets if p.tag != TAG_TRUST)

    def describe(self) -> str:
        uid = f" ({self.uids[0]})" if self.uids else ""
        return f"{self.fingerprint}{uid}"

    def as_dict(self) -> dict:
        return dict(fingerprint=self.fingerprint, key_id=self.key_id, algorithm=self.algorithm,
                    created=self.created, uids=list(self.uids), subkeys=self.subkey_fingerprints)


def _key_info(body: bytes):
    return ALGORITHMS.get(body[5], f"algorithm {body[5]}"), int.from_bytes(body[1:5], "big")


def read_keys(data: bytes, source: str = "key data") -> list:
    """Every primary key in ``data`` (armoured or binary), in file order."""
    stream = dearmor(data, source)
    keys, current = [], None
    for packet in parse_packets(stream, source):
        if packet.tag in (TAG_SECRET_KEY, TAG_SECRET_SUBKEY):
            raise OpenPGPError(f"{source}: holds a {packet_name(packet.tag)} at byte offset {packet.start}: "
                               f"give the public key (gpg --export), never a secret key")
        if packet.tag == TAG_MARKER:
            continue
        if packet.tag == TAG_PUBLIC_KEY:
            fingerprint = key_fingerprint(packet.body, source, "public key")
            algorithm, created = _key_info(packet.body)
            current = PrimaryKey(fingerprint, algorithm, created, [packet], stream)
            keys.append(current)
            continue
        if current is None:
            raise OpenPGPError(f"{source}: not an OpenPGP public key: the first packet is a "
                               f"{packet_name(packet.tag)}, not a public key packet (tag 6)")
        current.packets.append(packet)
        if packet.tag == TAG_PUBLIC_SUBKEY:
            fingerprint = key_fingerprint(packet.body, source, f"subkey of {current.fingerprint}")
            current.subkeys.append(Subkey(fingerprint, *_key_info(packet.body)))
        elif packet.tag == TAG_USER_ID:
            current.uids.append(packet.body.decode("utf-8", "replace"))
    if not keys:
        raise OpenPGPError(f"{source}: not an OpenPGP key: no public key packet")
    return keys


def find_key(data: bytes, fingerprint: str, source: str = "key data") -> PrimaryKey:
    """The primary key with ``fingerprint`` (compared case- and space-insensitively)."""
    wanted = normalize_fingerprint(fingerprint)
    if not re.fullmatch(r"[0-9A-F]{40}", wanted):
        raise OpenPGPError(f"'{fingerprint}' is not a v4 fingerprint: 40 hexadecimal digits expected")
    keys = read_keys(data, source)
    for key in keys:
        if key.fingerprint == wanted:
            return key
    for key in keys:
        if wanted in key.subkey_fingerprints:
            raise OpenPGPError(f"{source}: {wanted} is a subkey of primary key {key.describe()}; declare the "
                               f"primary key's fingerprint {key.fingerprint} (apt's Signed-By needs the primary "
                               f"key with its subkeys)")
    held = ", ".join(key.describe() for key in keys)
    raise OpenPGPError(f"{source}: no key with fingerprint {wanted}; the file holds {held}")


def export_key(data: bytes, fingerprint: str, source: str = "key data") -> bytes:
    """The binary transferable public key of exactly the primary key with ``fingerprint``."""
    return find_key(data, fingerprint, source).transferable()


def read_key_file(path: str) -> list:
    with open(path, "rb") as handle:
        return read_keys(handle.read(), path)
