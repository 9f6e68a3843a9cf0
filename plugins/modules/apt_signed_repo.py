#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: Lockstep contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Ansible module apt_signed_repo: one apt repository whose Signed-By keyring is pinned by fingerprint."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: apt_signed_repo
short_description: One apt repository in deb822 form, its Signed-By keyring pinned by fingerprint and tried before it is installed
description:
  - "Manages two files for the repository O(name): C(<sources_dir>/lockstep-<name>.sources) (deb822) and
    C(<keyring_dir>/lockstep-<name>.gpg), the binary keyring that the source's C(Signed-By) field names."
  - The key is fetched on the node from O(key_url) (C(https://) or C(file://); plain C(http://) is
    refused, because the key is what apt trusts). The module reads the OpenPGP key file itself
    (ASCII-armoured or binary, Python standard library only), finds the primary key whose v4
    fingerprint is O(key_fingerprint) and writes exactly that key - its user IDs, signatures and
    subkeys - into the keyring. A key file that holds several keys therefore yields a keyring that
    holds only the declared one. A fingerprint that matches only a subkey is refused, naming the
    primary key.
  - The rendered C(.sources) text and the keyring are compared with what is installed. When both are
    the same the module reports no change and runs nothing.
  - When something would change and O(trial=true), the candidate is tried first - also in check mode -
    with C(apt-get update) on a temporary directory that holds only the candidate source, the candidate
    keyring and empty lists (C(Dir::Etc::SourceList), C(Dir::Etc::SourceParts=/nonexistent),
    C(Dir::State::Lists), no package caches, C(APT::Update::Error-Mode=any)). Any C(W:), C(E:) or C(Err:)
    line fails the task with the repository URL, the key URL and apt's error lines, and the node's apt
    configuration is left as it was. So a check-mode run is a preflight. It learns that a URL does not
    answer, that the suite does not exist or that the repository is signed by another key, and it
    changes nothing.
  - Then, outside check mode, the keyring (mode 0644) and the source are installed atomically, and with
    O(update_lists=true) apt fetches the lists of this repository only (C(apt-get update) with
    C(Dir::Etc::SourceList) set to the new C(.sources) file, C(Dir::Etc::SourceParts=/nonexistent) and
    C(APT::Get::List-Cleanup=0), so the lists of the other repositories stay as they are). If that update
    fails, the previous files are put back and the task fails.
  - A key URL that cannot be fetched, a key file without the declared fingerprint (the message names
    the URL, the declared fingerprint and the fingerprints found) and every other failure leave the
    installed files untouched.
version_added: "0.1.0"
author:
  - Lockstep contributors (@lockstep)
options:
  name:
    description:
      - The repository's name in the two file names (C(lockstep-<name>.sources), C(lockstep-<name>.gpg)).
      - Letters, digits, C(_), C(-) and C(.) only; apt ignores other file names in C(sources.list.d).
    type: str
    required: true
  uris:
    description:
      - The repository URL (C(http://), C(https://) or C(file:)); several give mirrors of the same
        repository. Plain C(http://) is allowed for the repository, since apt checks its signatures.
      - Required with O(state=present).
    type: list
    elements: str
  suites:
    description:
      - The suites. A suite that ends in C(/) names a directory (a flat repository such as NVIDIA's CUDA
        repository, whose suite is C(/)) and takes no components; any other suite needs O(components).
    type: list
    elements: str
    default: ["/"]
  components:
    description: The components (e.g. C(stable), C(main)); the C(Components) field is written only when given.
    type: list
    elements: str
    default: []
  architectures:
    description: The architectures apt fetches (e.g. C(amd64)); the C(Architectures) field is written only when given.
    type: list
    elements: str
    default: []
  key_url:
    description:
      - Where the node fetches the repository's OpenPGP public key, ASCII-armoured or binary. C(https://)
        or C(file://) only; C(http://) is refused.
      - Required with O(state=present).
    type: str
  key_fingerprint:
    description:
      - The v4 fingerprint (40 hexadecimal digits; spaces and case do not matter) of the primary key
        that signs the repository. Only this key is written into the keyring.
      - Required with O(state=present).
    type: str
  state:
    description: C(present) installs the source and the keyring; C(absent) removes both files.
    type: str
    choices: [present, absent]
    default: present
  trial:
    description:
      - Try the candidate with C(apt-get update) in a temporary directory before anything is installed
        (also in check mode). Only runs when something would change.
    type: bool
    default: true
  update_lists:
    description: After installing a change, fetch this repository's package lists (only this repository's).
    type: bool
    default: true
  validate_certs:
    description: Verify the TLS certificate of an C(https://) O(key_url). apt's own TLS settings apply to the repository.
    type: bool
    default: true
  timeout:
    description: Seconds to wait for the key download, and apt's connection timeout during the trial.
    type: int
    default: 30
  comment:
    description: The comment written at the top of the C(.sources) file (each line prefixed with C(#)); empty writes none.
    type: str
    default: "Managed by Ansible (lockstep.gpu.apt_signed_repo): local changes are overwritten."
  sources_dir:
    description: The directory of the C(.sources) file.
    type: path
    default: /etc/apt/sources.list.d
  keyring_dir:
    description: The directory of the keyring.
    type: path
    default: /etc/apt/keyrings
notes:
  - "Credentials in a URL (C(user:password@), an C(/t/<token>/) path, a C(token=) or C(password=) query) are shown
    as C(***) in every failure message."
  - Supports check mode (the trial still runs, in a temporary directory that is removed afterwards) and
    diff mode (the C(.sources) text).
  - Needs C(apt-get) on the node when O(trial) or O(update_lists) is set and something changes.
  - Only v4 OpenPGP keys are read; v5 and v6 keys are refused with a message saying so.
  - apt downloads as its unprivileged C(_apt) user, so a C(file:) repository must be readable by that
    user (every directory above it included); the trial reports C(Permission denied) otherwise. The
    O(key_url) is read by the module itself.
seealso:
  - name: sources.list(5), the deb822 format
    description: The C(Types), C(URIs), C(Suites), C(Components), C(Architectures) and C(Signed-By) fields.
    link: https://manpages.debian.org/bookworm/apt/sources.list.5.en.html
"""

EXAMPLES = r"""
- name: NVIDIA's CUDA repository (a flat repository), key pinned by fingerprint
  lockstep.gpu.apt_signed_repo:
    name: cuda
    uris: [https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/]
    key_url: https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/3bf863cc.pub
    key_fingerprint: EB69 3B30 35CD 5710 E231  E123 A4B4 6996 3BF8 63CC

- name: Docker's repository
  lockstep.gpu.apt_signed_repo:
    name: docker
    uris: [https://download.docker.com/linux/debian]
    suites: ["{{ ansible_facts['distribution_release'] }}"]
    components: [stable]
    architectures: [amd64]
    key_url: https://download.docker.com/linux/debian/gpg
    key_fingerprint: 9DC858229FC7DD38854AE2D88D81803C0EBFCD88

- name: Preflight - would the NVIDIA container toolkit repository work with this key? Changes nothing.
  lockstep.gpu.apt_signed_repo:
    name: nvidia-container-toolkit
    uris: [https://nvidia.github.io/libnvidia-container/stable/deb/amd64/]
    key_url: https://nvidia.github.io/libnvidia-container/gpgkey
    key_fingerprint: C95B321B61E88C1809C4F759DDCAE044F796ECB0
  check_mode: true

- name: A local mirror served from the node's disk
  lockstep.gpu.apt_signed_repo:
    name: mirror
    uris: [file:///srv/mirror/cuda/]
    key_url: file:///srv/mirror/cuda/3bf863cc.pub
    key_fingerprint: EB693B3035CD5710E231E123A4B469963BF863CC
    update_lists: false

- name: Remove the repository and its keyring
  lockstep.gpu.apt_signed_repo:
    name: docker
    state: absent
"""

RETURN = r"""
changed:
  description: Whether either file was (or, in check mode, would be) written or removed.
  returned: always
  type: bool
sources_file:
  description: The path of the C(.sources) file.
  returned: always
  type: str
  sample: /etc/apt/sources.list.d/lockstep-cuda.sources
keyring:
  description: The path of the keyring the source's C(Signed-By) names.
  returned: always
  type: str
  sample: /etc/apt/keyrings/lockstep-cuda.gpg
fingerprint:
  description: The declared fingerprint, normalised (upper case, no spaces); null with O(state=absent).
  returned: always
  type: str
  sample: EB693B3035CD5710E231E123A4B469963BF863CC
uids:
  description: The user IDs of the key written into the keyring.
  returned: always
  type: list
  elements: str
  sample: ["cudatools <cudatools@nvidia.com>"]
key_changed:
  description: Whether the keyring differs (or differed) from the installed one.
  returned: always
  type: bool
source_changed:
  description: Whether the C(.sources) text differs (or differed) from the installed one.
  returned: always
  type: bool
trial:
  description:
    - C(passed) - the candidate was tried with C(apt-get update) and worked; C(skipped) - something
      changed but O(trial=false); C(not needed) - nothing changed, or O(state=absent).
  returned: always
  type: str
  choices: [passed, skipped, not needed]
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.lockstep.gpu.plugins.module_utils.apt_repo import (
    DEFAULT_COMMENT,
    RepoError,
    check_options,
    fetch_key,
    file_names,
    install_file,
    read_bytes,
    render_sources,
    run_trial,
    select_key,
    update_lists,
)
from ansible_collections.lockstep.gpu.plugins.module_utils.openpgp import normalize_fingerprint
from ansible_collections.lockstep.gpu.plugins.module_utils.redact import redact_urls


def _text(data):
    return "" if data is None else data.decode("utf-8", "replace")


def _absent(module, result, sources_file, keyring_file):
    before_source, before_key = read_bytes(sources_file), read_bytes(keyring_file)
    result.update(source_changed=before_source is not None, key_changed=before_key is not None)
    result["changed"] = result["source_changed"] or result["key_changed"]
    if module._diff:
        result["diff"] = dict(before=_text(before_source), after="", before_header=sources_file,
                              after_header=f"{sources_file} (absent)")
    if result["changed"] and not module.check_mode:
        install_file(module, sources_file, None)
        install_file(module, keyring_file, None)
    module.exit_json(**result)


def _present(module, result, sources_file, keyring_file):
    params = module.params
    fingerprint = normalize_fingerprint(params["key_fingerprint"])
    result["fingerprint"] = fingerprint
    key = select_key(fetch_key(module, params["key_url"], params["timeout"]), params["key_url"], fingerprint)
    keyring = key.transferable()
    result["uids"] = list(key.uids)
    text = render_sources(params["uris"], params["suites"], params["components"], params["architectures"],
                          keyring_file, params["comment"])
    before_source, before_key = read_bytes(sources_file), read_bytes(keyring_file)
    result["key_changed"] = before_key != keyring
    result["source_changed"] = before_source != text.encode("utf-8")
    if module._diff:
        result["diff"] = dict(before=_text(before_source), after=text, before_header=sources_file,
                              after_header=f"{sources_file} (key {fingerprint})")
    if not (result["key_changed"] or result["source_changed"]):
        module.exit_json(**result)
    result["changed"] = True

    apt_get = None
    if params["trial"] or (params["update_lists"] and not module.check_mode):
        apt_get = module.get_bin_path("apt-get", required=True)
    if params["trial"]:
        run_trial(module, apt_get, params, keyring, fingerprint)
        result["trial"] = "passed"
    else:
        result["trial"] = "skipped"
    if module.check_mode:
        module.exit_json(**result)

    # The keyring first, so that the source never names a key that is not there yet.
    installed = []
    try:
        if result["key_changed"]:
            install_file(module, keyring_file, keyring)
            installed.append((keyring_file, before_key))
        if result["source_changed"]:
            install_file(module, sources_file, text.encode("utf-8"))
            installed.append((sources_file, before_source))
        if params["update_lists"]:
            problems = update_lists(module, apt_get, sources_file)
            if problems:
                raise RepoError(f"apt-get update of {' '.join(params['uris'])} failed after the files were "
                                f"installed: {'; '.join(problems)}. The previous {sources_file} and {keyring_file} "
                                f"were put back.")
    except Exception:
        for path, before in reversed(installed):
            install_file(module, path, before)
        raise
    module.exit_json(**result)


def run_module():
    module = AnsibleModule(
        argument_spec=dict(
            name=dict(type="str", required=True),
            uris=dict(type="list", elements="str"),
            suites=dict(type="list", elements="str", default=["/"]),
            components=dict(type="list", elements="str", default=[]),
            architectures=dict(type="list", elements="str", default=[]),
            # A URL and a public key's fingerprint: nothing secret.
            key_url=dict(type="str", no_log=False),
            key_fingerprint=dict(type="str", no_log=False),
            state=dict(type="str", default="present", choices=["present", "absent"]),
            trial=dict(type="bool", default=True),
            update_lists=dict(type="bool", default=True),
            validate_certs=dict(type="bool", default=True),
            timeout=dict(type="int", default=30),
            comment=dict(type="str", default=DEFAULT_COMMENT),
            sources_dir=dict(type="path", default="/etc/apt/sources.list.d"),
            keyring_dir=dict(type="path", default="/etc/apt/keyrings"),
        ),
        required_if=[("state", "present", ("uris", "key_url", "key_fingerprint"))],
        supports_check_mode=True,
    )
    params = module.params
    sources_file, keyring_file = file_names(params)
    result = dict(changed=False, sources_file=sources_file, keyring=keyring_file, fingerprint=None, uids=[],
                  key_changed=False, source_changed=False, trial="not needed")
    errors = check_options(params)
    if errors:
        errors = [redact_urls(error) for error in errors]
        module.fail_json(msg="invalid options: " + "; ".join(errors), errors=errors, **result)
    try:
        if params["state"] == "absent":
            _absent(module, result, sources_file, keyring_file)
        else:
            _present(module, result, sources_file, keyring_file)
    except RepoError as exc:
        module.fail_json(msg=redact_urls(exc), **result)
    except OSError as exc:
        module.fail_json(msg=f"{getattr(exc, 'filename', None) or 'apt files'}: {exc.strerror or exc}", **result)


def main():
    run_module()


if __name__ == "__main__":
    main()
