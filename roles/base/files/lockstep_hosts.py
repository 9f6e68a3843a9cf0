# Copyright: Lockstep contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""lockstep_hosts.py BLOCK HOSTS: put the cluster's names back into HOSTS at boot.

Role base writes the cluster's nodes into /etc/hosts as a marked block and
keeps a copy of that block in BLOCK. Something may rewrite /etc/hosts at
boot (podman at every container start, cloud-init's manage_etc_hosts on
cloud hosts) and lose the block: then Slurm and munge cannot find the other
nodes until the next converge. lockstep-hosts.service runs this before them:
when HOSTS does not hold BLOCK's lines as they are, the old block (if any) is
removed and BLOCK appended; every other line stays. HOSTS is written in place
(in a container it is a bind mount that a rename cannot replace).
"""

import sys

BEGIN = "# BEGIN Lockstep cluster nodes (role base)"
END = "# END Lockstep cluster nodes (role base)"


def restored(hosts, block):
    """HOSTS' text with BLOCK's lines in it, unchanged when they are there already."""
    lines, wanted = hosts.splitlines(), block.strip("\n").splitlines()
    if not wanted or any(lines[i:i + len(wanted)] == wanted for i in range(len(lines))):
        return hosts
    kept, inside = [], False
    for line in lines:
        if line.strip() == BEGIN:
            inside = True
        elif line.strip() == END and inside:
            inside = False
        elif not inside:
            kept.append(line)
    return "\n".join(kept + wanted) + "\n"


def main(argv):
    if len(argv) != 3:
        sys.stderr.write("usage: lockstep_hosts.py BLOCK HOSTS\n")
        return 2
    with open(argv[1], encoding="utf-8") as handle:
        block = handle.read()
    try:
        with open(argv[2], encoding="utf-8") as handle:
            hosts = handle.read()
    except FileNotFoundError:
        hosts = ""
    new = restored(hosts, block)
    if new != hosts:
        with open(argv[2], "w", encoding="utf-8") as handle:
            handle.write(new)
        sys.stdout.write(f"{argv[2]}: the cluster's names restored from {argv[1]}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
