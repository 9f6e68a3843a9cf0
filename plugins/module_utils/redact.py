# -*- coding: utf-8 -*-
# Copyright: Lockstep contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Credentials out of messages: mirrors and channels behind a firewall are
often reached as https://user:password@mirror/... or through an
anaconda.org-style token path (https://conda.example.com/t/<token>/channel).
Every module message that may quote such a URL goes through
:func:`redact_urls`."""

from __future__ import annotations

import re

# scheme://user[:password]@host  ->  scheme://***@host
_USERINFO = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.-]*://)[^\s/@]+@")
# scheme://host/t/<token>/...  ->  scheme://host/t/***/...
_TOKEN_PATH = re.compile(r"(?P<host>://[^\s/]+)/t/[^\s/]+/")
# ?token=... / &password=... in a query string
_QUERY_SECRET = re.compile(r"(?P<key>[?&](?:token|access_token|password|passwd|secret|key)=)[^\s&#]+", re.IGNORECASE)


def redact_urls(text) -> str:
    """``text`` with the credentials of every URL in it replaced by ``***``."""
    text = _USERINFO.sub(r"\g<scheme>***@", str(text))
    text = _TOKEN_PATH.sub(r"\g<host>/t/***/", text)
    return _QUERY_SECRET.sub(r"\g<key>***", text)


def has_credentials(value) -> bool:
    """Whether ``value`` (a string, or a list or dict of them, nested) holds a URL with credentials."""
    if isinstance(value, dict):
        return any(has_credentials(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(has_credentials(v) for v in value)
    return value is not None and redact_urls(value) != str(value)
