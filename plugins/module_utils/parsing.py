# -*- coding: utf-8 -*-
# Copyright: Lockstep contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What Lockstep's parsers share: their error, the text check, integer reading."""

from __future__ import annotations

import re

_DECIMAL = re.compile(r"^[+-]?[0-9]+$")
_HEX = re.compile(r"^0[xX][0-9a-fA-F]+$")


class ParseError(ValueError):
    """Raised when a command's output cannot be read.

    The message says what was expected and, where the caller passes it, which
    source (command or bundle file) the text came from.
    """

    def __init__(self, message: str, source: str | None = None):
        self.source = source
        super().__init__(f"{source}: {message}" if source else message)


def require_text(text, source, what):
    """Return ``text`` as str, or raise ParseError when there is nothing to parse.

    ``what`` names what the caller expected (e.g. "nvidia-smi -q -x output").
    """
    if text is None:
        raise ParseError("no input: expected %s" % what, source)
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    if not isinstance(text, str):
        raise ParseError("expected %s as text, got %s" % (what, type(text).__name__), source)
    if not text.strip():
        raise ParseError("empty input: expected %s" % what, source)
    return text


def int_or_none(value):
    """An integer from an int or a decimal (or 0x hexadecimal) string; None otherwise.

    ``None``, booleans, ``"N/A"`` and anything else that is not a whole number
    read as None, so a parser never fails on a field it only reports.
    """
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    text = str(value).strip()
    if _DECIMAL.match(text):
        return int(text)
    if _HEX.match(text):
        return int(text, 16)
    return None
