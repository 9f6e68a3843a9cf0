# -*- coding: utf-8 -*-
# Copyright: Lockstep contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One apt repository in deb822 form, its Signed-By keyring pinned by fingerprint.

The logic of the ``apt_signed_repo`` module: checking the options, fetching the
key, rendering the ``.sources`` text, trying the candidate with ``apt-get
update`` in a throw-away directory, and installing the two files atomically.
The functions that need the running module take it as their first argument.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import tempfile

from ansible_collections.lockstep.gpu.plugins.module_utils.openpgp import (
    OpenPGPError,
    find_key,
    normalize_fingerprint,
)

DEFAULT_COMMENT = "Managed by Ansible (lockstep.gpu.apt_signed_repo): local changes are overwritten."
# apt reads only sources.list.d files whose names use these characters (apt.conf(5), Dir::Etc::SourceParts).
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
REPO_SCHEMES = ("http://", "https://", "file:")
KEY_SCHEMES = ("https://", "file://")
# Lines of `apt-get update` that are a failure; the notice that apt downloads as root
# because _apt cannot reach a directory is not one.
PROBLEM_RE = re.compile(r"^(W|E|Err):")
UNSANDBOXED = "Download is performed unsandboxed"


class RepoError(Exception):
    """A failure the module reports as its message, without changing the node."""


# --------------------------------------------------------------------------
# Options and file names
# --------------------------------------------------------------------------
def file_names(params: dict) -> tuple:
    name = params["name"]
    return (os.path.join(params["sources_dir"], f"lockstep-{name}.sources"),
            os.path.join(params["keyring_dir"], f"lockstep-{name}.gpg"))


def check_options(params: dict) -> list:
    """Every problem with the options, each naming its option."""
    errors = []
    name = params.get("name") or ""
    if not NAME_RE.match(name):
        errors.append(f"name '{name}': use letters, digits, '_', '-' and '.' only (apt ignores other file names "
                      f"in sources.list.d)")
    if params.get("state") == "absent":
        return errors
    uris = params.get("uris") or []
    if not uris:
        errors.append("uris: give the repository URL")
    for uri in uris:
        if not uri.startswith(REPO_SCHEMES):
            errors.append(f"uris: '{uri}' is not an http://, https:// or file: URL")
        if any(c.isspace() for c in uri):
            errors.append(f"uris: '{uri}' contains white space")
    key_url = params.get("key_url") or ""
    if key_url.startswith("http://"):
        errors.append(f"key_url: '{key_url}' is plain http://; the key is what apt trusts, so it must come over "
                      f"https:// or from a file:// URL (the repository itself may use http://, apt checks its "
                      f"signatures)")
    elif not key_url.startswith(KEY_SCHEMES):
        errors.append(f"key_url: '{key_url}' is not an https:// or file:// URL")
    fingerprint = normalize_fingerprint(params.get("key_fingerprint"))
    if not re.fullmatch(r"[0-9A-F]{40}", fingerprint):
        errors.append(f"key_fingerprint: '{params.get('key_fingerprint')}' is not a v4 fingerprint "
                      f"(40 hexadecimal digits, spaces allowed)")
    suites = params.get("suites") or []
    if not suites:
        errors.append("suites: give at least one suite ('/' for a flat repository)")
    flat = [s for s in suites if s.endswith("/")]
    if flat and params.get("components"):
        errors.append(f"components: must be empty for the flat suite(s) {', '.join(flat)} (a suite ending in '/' "
                      f"names a directory, apt refuses components with it)")
    if len(flat) != len(suites) and not params.get("components"):
        errors.append("components: a suite that does not end in '/' needs at least one component (e.g. main)")
    for option in ("suites", "components", "architectures"):
        for value in params.get(option) or []:
            if not value or any(c.isspace() for c in value):
                errors.append(f"{option}: '{value}' is empty or contains white space")
    return errors


# --------------------------------------------------------------------------
# The .sources text
# --------------------------------------------------------------------------
def render_sources(uris, suites, components, architectures, signed_by: str, comment: str = "") -> str:
    lines = [f"# {line}".rstrip() for line in (comment or "").splitlines()]
    lines += ["Types: deb", "URIs: " + " ".join(uris), "Suites: " + " ".join(suites)]
    if components:
        lines.append("Components: " + " ".join(components))
    if architectures:
        lines.append("Architectures: " + " ".join(architectures))
    lines.append(f"Signed-By: {signed_by}")
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------
# The key
# --------------------------------------------------------------------------
def fetch_key(module, url: str, timeout: int) -> bytes:
    """The bytes at ``url`` (https:// through fetch_url, file:// from the disk)."""
    if url.startswith("file://"):
        path = url[len("file://"):]
        try:
            with open(path, "rb") as handle:
                return handle.read()
        except OSError as exc:
            raise RepoError(f"cannot read the key at {url}: {exc.strerror or exc}") from None
    from ansible.module_utils.urls import fetch_url
    response, info = fetch_url(module, url, timeout=timeout)
    if response is None or info.get("status") != 200:
        raise RepoError(f"cannot fetch the key from {url}: {info.get('msg', 'no answer')} "
                        f"(HTTP status {info.get('status')})")
    try:
        return response.read()
    except Exception as exc:  # the connection may drop while reading
        raise RepoError(f"cannot fetch the key from {url}: {exc}") from None


def select_key(data: bytes, url: str, fingerprint: str):
    """The declared primary key in the fetched file, or a RepoError naming what is there."""
    try:
        return find_key(data, fingerprint, url)
    except OpenPGPError as exc:
        raise RepoError(f"key_url {url} does not provide the declared key_fingerprint "
                        f"{normalize_fingerprint(fingerprint)}: {exc}") from None


# --------------------------------------------------------------------------
# apt-get update
# --------------------------------------------------------------------------
def apt_problems(out: str, err: str) -> list:
    """W:/E:/Err: lines of apt-get output (an Err: line with its indented detail)."""
    problems = []
    for text in (out or "", err or ""):
        lines = text.splitlines()
        for index, line in enumerate(lines):
            if not PROBLEM_RE.match(line) or UNSANDBOXED in line:
                continue
            detail = [line.strip()]
            if line.startswith("Err:"):
                for more in lines[index + 1:]:
                    if not more.startswith(" "):
                        break
                    detail.append(more.strip())
            problem = " ".join(detail)
            if problem not in problems:
                problems.append(problem)
    return problems


def _apt_env() -> dict:
    return dict(LC_ALL="C", LANG="C", LANGUAGE="C")


def _world_traversable(path: str) -> bool:
    path = os.path.realpath(path)
    while True:
        try:
            if not os.stat(path).st_mode & stat.S_IXOTH:
                return False
        except OSError:
            return False
        parent = os.path.dirname(path)
        if parent == path:
            return True
        path = parent


def trial_base() -> str:
    """A directory apt's unprivileged _apt user can reach, so downloads stay sandboxed."""
    for candidate in (os.environ.get("TMPDIR"), "/tmp", "/var/tmp"):
        if candidate and os.path.isdir(candidate) and _world_traversable(candidate):
            return candidate
    return tempfile.gettempdir()


def trial_command(apt_get: str, workdir: str, timeout: int) -> list:
    return [apt_get, "-q", "update",
            "-o", f"Dir::Etc::SourceList={workdir}/candidate.sources",
            "-o", "Dir::Etc::SourceParts=/nonexistent",
            "-o", f"Dir::State::Lists={workdir}/lists",
            "-o", "Dir::Cache::pkgcache=", "-o", "Dir::Cache::srcpkgcache=",
            "-o", "APT::Update::Error-Mode=any",
            "-o", "APT::Get::List-Cleanup=0",
            "-o", "Acquire::Retries=0",
            "-o", f"Acquire::http::Timeout={timeout}", "-o", f"Acquire::https::Timeout={timeout}"]


def update_command(apt_get: str, sources_file: str) -> list:
    return [apt_get, "-q", "update",
            "-o", f"Dir::Etc::SourceList={sources_file}",
            "-o", "Dir::Etc::SourceParts=/nonexistent",
            "-o", "APT::Get::List-Cleanup=0"]


def describe_failure(problems: list, fingerprint: str) -> str:
    text = "; ".join(problems).rstrip(".") or "apt-get update failed without an error line"
    others = sorted(set(re.findall(r"NO_PUBKEY ([0-9A-Fa-f]{16})", text)))
    if others:
        text += (f" (the repository is signed by key {', '.join(others)}, not by the declared key {fingerprint})")
    if "Permission denied" in text:
        text += (" (apt downloads as its unprivileged _apt user: a file: repository must be readable by it, "
                 "every directory above it included)")
    return text


def run_trial(module, apt_get: str, params: dict, keyring: bytes, fingerprint: str) -> None:
    """apt-get update with only the candidate source and keyring, in a temporary directory."""
    workdir = tempfile.mkdtemp(prefix="lockstep-apt-trial-", dir=trial_base())
    try:
        os.chmod(workdir, 0o755)
        os.makedirs(os.path.join(workdir, "lists", "partial"))
        keyring_path = os.path.join(workdir, "keyring.gpg")
        with open(keyring_path, "wb") as handle:
            handle.write(keyring)
        os.chmod(keyring_path, 0o644)
        text = render_sources(params["uris"], params["suites"], params["components"], params["architectures"],
                              keyring_path)
        with open(os.path.join(workdir, "candidate.sources"), "w", encoding="utf-8") as handle:
            handle.write(text)
        rc, out, err = module.run_command(trial_command(apt_get, workdir, params["timeout"]),
                                          environ_update=_apt_env())
        problems = apt_problems(out, err)
        if rc != 0 or problems:
            raise RepoError(
                f"the repository {' '.join(params['uris'])} with the key from {params['key_url']} "
                f"(fingerprint {fingerprint}) failed the trial apt-get update: "
                f"{describe_failure(problems, fingerprint)}. The node's apt configuration was not changed.")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def update_lists(module, apt_get: str, sources_file: str) -> list:
    """Fetch this repository's lists only; the problems found (empty when it worked)."""
    rc, out, err = module.run_command(update_command(apt_get, sources_file), environ_update=_apt_env())
    problems = apt_problems(out, err)
    if rc != 0 and not problems:
        problems = [f"apt-get update exited with {rc}: {(err or out).strip()}"]
    return problems


# --------------------------------------------------------------------------
# Files
# --------------------------------------------------------------------------
def read_bytes(path: str):
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise RepoError(f"cannot read {path}: {exc.strerror or exc}") from None


def install_file(module, path: str, data, mode: int = 0o644) -> None:
    """Write ``data`` to ``path`` atomically (None removes it)."""
    if data is None:
        if os.path.lexists(path):
            os.unlink(path)
        return
    directory = os.path.dirname(path) or "."
    if not os.path.isdir(directory):
        os.makedirs(directory, 0o755)
    fd, candidate = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".new", dir=directory)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.chmod(candidate, mode)
        module.atomic_move(candidate, path)
        os.chmod(path, mode)
        candidate = None
    finally:
        if candidate and os.path.exists(candidate):
            os.unlink(candidate)
