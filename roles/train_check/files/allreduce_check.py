# Copyright: Lockstep contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One all_reduce across every rank, started by torchrun (role train_check).

Each rank contributes rank + 1; the sum must be n(n+1)/2. Every rank's host
name, versions and sum are gathered on rank 0, which prints the world size,
one line per rank and the sum, then one JSON line (``train_check_json``) for
Ansible, and exits 1 naming the ranks whose versions differ from its own or
whose sum is wrong. Backend: argv[1] (gloo, nccl or auto: nccl where CUDA is
available, else gloo).
"""

import importlib.metadata
import json
import os
import platform
import socket
import sys

import torch
import torch.distributed as dist

VERSION_KEYS = ("torch", "cuda", "nccl", "python")


def nccl_version():
    """The NCCL torch loads: the nvidia-nccl-cu12 wheel's version, None without it."""
    try:
        return importlib.metadata.version("nvidia-nccl-cu12")
    except importlib.metadata.PackageNotFoundError:
        return None


def gather(mine, size, device):
    """Every rank's dict on every rank, as JSON bytes in uint8 tensors
    (all_gather_object would need numpy, which torch does not require)."""
    data = json.dumps(mine).encode()
    length = torch.tensor([len(data)], device=device)
    lengths = [torch.zeros_like(length) for _rank in range(size)]
    dist.all_gather(lengths, length)
    longest = max(int(n.item()) for n in lengths)
    buf = torch.zeros(longest, dtype=torch.uint8, device=device)
    buf[:len(data)] = torch.tensor(list(data), dtype=torch.uint8, device=device)
    bufs = [torch.zeros_like(buf) for _rank in range(size)]
    dist.all_gather(bufs, buf)
    return [json.loads(bytes(b[:int(n.item())].tolist()).decode()) for b, n in zip(bufs, lengths)]


def main():
    wanted = sys.argv[1] if len(sys.argv) > 1 else "auto"
    backend = ("nccl" if torch.cuda.is_available() else "gloo") if wanted == "auto" else wanted
    device = "cpu"
    if backend == "nccl":
        device = "cuda:%d" % int(os.environ.get("LOCAL_RANK", "0"))
        torch.cuda.set_device(device)
    dist.init_process_group(backend)
    rank, size = dist.get_rank(), dist.get_world_size()
    total = torch.tensor([float(rank + 1)], device=device)
    dist.all_reduce(total, op=dist.ReduceOp.SUM)
    expected = size * (size + 1) // 2
    mine = {
        "rank": rank, "host": socket.gethostname(), "torch": torch.__version__,
        "cuda": torch.version.cuda, "nccl": nccl_version(), "python": platform.python_version(),
        "sum": total.item(),
    }
    gathered = gather(mine, size, device)
    # No rank leaves while another still talks to it (a rank that exits early
    # leaves the others hanging in gloo and in torchrun's exit barrier).
    dist.barrier()
    bad = []
    if rank == 0:
        print("train_check world_size=%d backend=%s sum=%g expected=%d" % (size, backend, total.item(), expected))
    for info in gathered:
        differs = [k for k in VERSION_KEYS if info[k] != gathered[0][k]]
        problems = ["%s %s (rank 0: %s)" % (k, info[k], gathered[0][k]) for k in differs]
        if info["sum"] != expected:
            problems.append("sum %g (expected %d)" % (info["sum"], expected))
        info["problems"] = problems
        if problems:
            bad.append("rank %d (%s): %s" % (info["rank"], info["host"], "; ".join(problems)))
        if rank != 0:
            continue
        print("train_check rank=%(rank)d host=%(host)s torch=%(torch)s cuda=%(cuda)s nccl=%(nccl)s "
              "python=%(python)s sum=%(sum)g" % info + ("  <- " + "; ".join(problems) if problems else ""))
    if rank != 0:  # every rank ends as rank 0 does, so that torchrun's agents agree
        if bad:
            print("train_check FAILED: rank 0 prints why", file=sys.stderr)
        return 1 if bad else 0
    print("train_check_json " + json.dumps({"world_size": size, "backend": backend, "expected": expected,
                                            "ranks": gathered, "bad": bad}, sort_keys=True))
    if bad:
        print("train_check FAILED: " + " | ".join(bad), file=sys.stderr)
        return 1
    print("train_check OK: %d ranks agree, sum %g" % (size, total.item()))
    return 0


if __name__ == "__main__":
    CODE = main()
    sys.stdout.flush()
    sys.stderr.flush()
    # Leave without Python's teardown: gloo's destructors at interpreter exit
    # can wait on peers that have already gone, and torchrun's agents then
    # hang in their exit barrier until the deadline.
    os._exit(CODE)
