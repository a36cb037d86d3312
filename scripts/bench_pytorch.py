#!/usr/bin/env python3
"""Training throughput of a cnnpar network JSON in PyTorch (CPU, FP32), one process or DDP.

Builds the network of scenarios/networks/<name>.json (scripts/torch_network.py: chains and
graphs), trains it with SGD (momentum 0.9, weight decay 5e-4)
on random data and prints JSON with images/s = batch / median iteration time. With
--ranks P > 1, P processes train batch/P images each under DistributedDataParallel (gloo),
and an iteration takes as long as the slowest rank's.
Used by scripts/bench_pytorch.sh as the peer of cnnpar-run; never a dependency.
"""
import argparse
import json
import os
import statistics
import sys
import time

import torch
import torch.nn as nn

from torch_network import Network


def train(a, rank=0, world=1):
    """Trains on a.batch // world images per rank; returns the iteration times (s) after warm-up."""
    torch.set_num_threads(a.threads)
    torch.manual_seed(1)
    with open(a.network) as f:
        net = json.load(f)
    model = Network(net)
    classes = model.classes
    if world > 1:
        model = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=5e-4)
    loss_fn = nn.CrossEntropyLoss()
    local = a.batch // world
    shape = (local, net["input"]["channels"], net["input"]["height"], net["input"]["width"])
    torch.manual_seed(1 + rank)
    x = torch.randn(*shape)
    y = torch.randint(0, classes, (local,))
    times = []
    for it in range(a.warmup + a.iterations):
        t0 = time.perf_counter()
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()  # DDP: the gradient allreduce (gloo) runs in here
        opt.step()
        t = time.perf_counter() - t0
        if it >= a.warmup:
            times.append(t)
    return net, times


def ddp_worker(rank, a, port, out):
    import torch.distributed as dist
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group("gloo", rank=rank, world_size=a.ranks)
    net, times = train(a, rank, a.ranks)
    # Every rank waits for the allreduce each iteration: the slowest rank sets the pace.
    t = torch.tensor(times, dtype=torch.float64)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    if rank == 0:
        out.put((net["name"], t.tolist()))
    dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--network", required=True, help="path of the network JSON")
    ap.add_argument("--batch", type=int, default=64, help="global mini-batch (split over --ranks)")
    ap.add_argument("--threads", type=int, default=1, help="intra-op threads per process")
    ap.add_argument("--ranks", type=int, default=1, help="processes; > 1 trains with DistributedDataParallel (gloo)")
    ap.add_argument("--iterations", type=int, default=6)
    ap.add_argument("--warmup", type=int, default=2)
    a = ap.parse_args()
    if a.ranks > 1:
        import socket
        import torch.multiprocessing as mp
        with socket.socket() as s:  # a free port for the rendezvous
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        ctx = mp.get_context("spawn")
        out = ctx.SimpleQueue()
        mp.spawn(ddp_worker, args=(a, port, out), nprocs=a.ranks, join=True)
        name, times = out.get()
    else:
        net, times = train(a)
        name = net["name"]
    t_iter = statistics.median(times)
    json.dump({"framework": "pytorch " + torch.__version__, "network": name, "batch": a.batch,
               "threads": a.threads, "ranks": a.ranks, "ddp_backend": "gloo" if a.ranks > 1 else None,
               "iteration_s_median": t_iter, "images_per_s": a.batch / t_iter,
               "mkldnn": bool(torch.backends.mkldnn.is_available())}, sys.stdout, indent=2)
    print()


if __name__ == "__main__":
    main()
