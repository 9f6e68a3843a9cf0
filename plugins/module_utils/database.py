# -*- coding: utf-8 -*-
# Copyright: Lockstep contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A database URL, checked by connecting before a service's configuration
is replaced with it (issue 29, finding 5: a gpustack_database_url with a
wrong password was written, the server crash-looped on "password
authentication failed", and the run named neither the variable nor the
cause). Used by module database_check; the drivers are GPUStack's own
(psycopg2 and PyMySQL in its venv). No function here ever returns the
password."""

from __future__ import annotations

from urllib.parse import parse_qs, unquote, urlsplit, urlunsplit

DEFAULT_PORTS = {"postgresql": 5432, "mysql": 3306}
# The Python module that connects to each kind (installed in GPUStack's venv).
DRIVERS = {"postgresql": "psycopg2", "mysql": "pymysql"}


def connect_args(url: str, timeout: int = 10):
    """URL -> (kind, keyword arguments of psycopg2.connect or pymysql.connect).

    postgresql://user:password@host:port/database?sslmode=...; a driver
    suffix (postgresql+asyncpg://) is allowed. ValueError says what is wrong.
    """
    parts = urlsplit(url)
    kind = {"postgres": "postgresql"}.get(parts.scheme.split("+", 1)[0], parts.scheme.split("+", 1)[0])
    if kind not in DEFAULT_PORTS:
        raise ValueError(f"the scheme {parts.scheme!r} is neither postgresql nor mysql")
    if not parts.hostname:
        raise ValueError("it names no host")
    try:
        port = parts.port or DEFAULT_PORTS[kind]
    except ValueError:
        raise ValueError("its port is not a number from 1 to 65535") from None
    args = {"host": parts.hostname, "port": port, "user": unquote(parts.username or ""),
            "password": unquote(parts.password or ""), "connect_timeout": int(timeout)}
    database = unquote(parts.path.lstrip("/"))
    query = {key: values[-1] for key, values in parse_qs(parts.query).items()}
    if kind == "postgresql":
        args["dbname"] = database
        if "sslmode" in query:
            args["sslmode"] = query["sslmode"]
    else:
        args["database"] = database
    return kind, args


def shown(url: str) -> str:
    """The URL as a message may quote it: the password replaced by ***."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.netloc.rsplit("@", 1)[1]
    return urlunsplit(parts._replace(netloc=f"{parts.username}:***@{host}"))


def database_message(error, password: str = "") -> str:
    """The driver's words on one line, the password (if it appears) replaced by ***."""
    text = " ".join(line.strip() for line in str(error).splitlines() if line.strip())
    return text.replace(password, "***") if password else text
