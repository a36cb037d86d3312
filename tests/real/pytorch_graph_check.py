#!/usr/bin/env python3
"""One training step's forward and backward of a cnnpar network against PyTorch's, on the same
weights and images: graph_dump runs cnnpar's executor in one process (no update) and writes its
input, labels, weights, logits, gradients and batch-norm running statistics; this script builds
the same network in PyTorch from the project's JSON (conv, batchnorm, relu, pool, add, concat,
fc, softmax with cross-entropy), loads the weights, runs forward and backward in training mode
and compares. Tolerance 1e-4 of each quantity's largest magnitude (FP32 in both; the sums run
in different orders). Exits 77 (ctest: skipped) when PyTorch is not installed.

Usage: pytorch_graph_check.py GRAPH_DUMP NETWORK.json BATCH SEED
"""
import json
import os
import subprocess
import sys
import tempfile

SKIP = 77
TOLERANCE = 1e-4

try:
    import torch
    import torch.nn.functional as F
except ImportError as error:
    print(f"pytorch_graph_check: skipped, PyTorch is not installed ({error}); Debian: python3-torch")
    sys.exit(SKIP)


def pair(value):
    return (value, value) if isinstance(value, int) else tuple(value)


class Graph(torch.nn.Module):
    """The network of a cnnpar JSON file; parameterised layers in file order."""

    def __init__(self, network):
        super().__init__()
        self.layers = network["layers"]
        self.modules_by_name = torch.nn.ModuleDict()
        self.parameterised = []
        channels = {None: network["input"]["channels"]}
        previous = None
        self.reads = {}
        for layer in self.layers:
            name, kind = layer["name"], layer["type"]
            reads = layer.get("inputs", [previous])
            self.reads[name] = reads
            c_in = channels[reads[0]]
            if kind == "conv":
                module = torch.nn.Conv2d(c_in, layer["maps"], pair(layer["kernel"]), stride=layer.get("stride", 1),
                                         padding=layer.get("pad", 0), bias=layer.get("bias", True))
                channels[name] = layer["maps"]
            elif kind == "batchnorm":
                module = torch.nn.BatchNorm2d(c_in, eps=layer.get("epsilon", 1e-5), momentum=layer.get("momentum", 0.1))
                channels[name] = c_in
            elif kind == "fc":
                module = torch.nn.LazyLinear(layer["outputs"])
                channels[name] = layer["outputs"]
            elif kind == "concat":
                module = None
                channels[name] = sum(channels[r] for r in reads)
            elif kind in ("relu", "pool", "add", "softmax"):
                module = None
                channels[name] = c_in
            else:
                raise SystemExit(f"pytorch_graph_check: no PyTorch equivalent here for a {kind} layer ({name})")
            if module is not None:
                key = name.replace(".", "_")
                self.modules_by_name[key] = module
                self.parameterised.append((name, kind, module))
            previous = name

    def forward(self, images):
        outputs = {None: images}
        logits = None
        for layer in self.layers:
            name, kind = layer["name"], layer["type"]
            inputs = [outputs[r] for r in self.reads[name]]
            x = inputs[0]
            if kind in ("conv", "batchnorm"):
                y = self.modules_by_name[name.replace(".", "_")](x)
            elif kind == "fc":
                y = self.modules_by_name[name.replace(".", "_")](torch.flatten(x, 1))
                logits = y
            elif kind == "relu":
                y = F.relu(x)
            elif kind == "pool":
                if layer.get("global", False):
                    kernel, stride, pad = x.shape[2:], 1, 0
                else:
                    kernel = pair(layer["kernel"])
                    stride, pad = layer.get("stride", kernel[0]), layer.get("pad", 0)
                if layer.get("mode", "max") == "max":
                    y = F.max_pool2d(x, kernel, stride, pad, ceil_mode=layer.get("ceil", False))
                else:
                    y = F.avg_pool2d(x, kernel, stride, pad, ceil_mode=layer.get("ceil", False))
            elif kind == "add":
                y = inputs[0]
                for other in inputs[1:]:
                    y = y + other
            elif kind == "concat":
                y = torch.cat(inputs, dim=1)
            elif kind == "softmax":
                y = x
            outputs[name] = y
        return logits

    def load_flat(self, flat):
        """cnnpar's order: per parameterised layer W then b (conv (O, C, KH, KW), fc (K_c, K_b),
        batchnorm scale then shift)."""
        at = 0
        with torch.no_grad():
            for _, _, module in self.parameterised:
                for tensor in (module.weight, module.bias):
                    if tensor is None:
                        continue
                    tensor.copy_(flat[at:at + tensor.numel()].view_as(tensor))
                    at += tensor.numel()
        assert at == flat.numel(), f"{flat.numel()} weights in the file, {at} in the model"

    def flat_gradients(self):
        parts = []
        for _, _, module in self.parameterised:
            for tensor in (module.weight, module.bias):
                if tensor is not None:
                    parts.append(tensor.grad.reshape(-1))
        return torch.cat(parts)


def read(path, dtype):
    with open(path, "rb") as f:
        return torch.frombuffer(bytearray(f.read()), dtype=dtype)


def relative(name, ours, theirs):
    scale = max(float(theirs.abs().max()), 1e-30)
    diff = float((ours - theirs).abs().max())
    print(f"  {name:<28} max |cnnpar - pytorch| = {diff:.3e}, largest |value| {scale:.3e}, ratio {diff / scale:.3e}")
    return diff / scale


def main():
    if len(sys.argv) != 5:
        print(__doc__, file=sys.stderr)
        return 2
    dump, network_path, batch, seed = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    with open(network_path) as f:
        network = json.load(f)
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as work:
        subprocess.run([dump, network_path, str(batch), seed, work], check=True)
        shape = network["input"]
        images = read(os.path.join(work, "input.bin"), torch.float32).view(batch, shape["channels"], shape["height"],
                                                                           shape["width"])
        labels = read(os.path.join(work, "labels.bin"), torch.int32).long()
        weights = read(os.path.join(work, "weights.bin"), torch.float32)
        gradients = read(os.path.join(work, "gradients.bin"), torch.float32)
        logits_cnnpar = read(os.path.join(work, "logits.bin"), torch.float32).view(batch, -1)
        running_cnnpar = read(os.path.join(work, "running.bin"), torch.float32)
        with open(os.path.join(work, "result.json")) as f:
            loss_cnnpar = json.load(f)["loss"]

    model = Graph(network)
    model.train()
    with torch.no_grad():
        model(images)  # shapes the lazy fc layers (and moves the running statistics: reset below)
    for _, kind, module in model.parameterised:
        if kind == "batchnorm":
            module.reset_running_stats()
    model.load_flat(weights)
    logits = model(images)
    loss = F.cross_entropy(logits, labels)
    loss.backward()
    running = torch.cat([torch.cat([m.running_mean, m.running_var]) for _, kind, m in model.parameterised
                         if kind == "batchnorm"]) if any(k == "batchnorm" for _, k, _ in model.parameterised) \
        else torch.zeros(0)

    print(f"pytorch_graph_check: {network['name']}, batch {batch}, {weights.numel()} parameters, "
          f"PyTorch {torch.__version__}")
    print(f"  loss: cnnpar {loss_cnnpar:.7f}, pytorch {float(loss):.7f}")
    worst = {
        "loss": abs(loss_cnnpar - float(loss)) / max(abs(float(loss)), 1.0),
        "logits": relative("logits", logits_cnnpar, logits.detach()),
        "gradients (all)": relative("gradients (all)", gradients, model.flat_gradients()),
    }
    if running.numel():
        worst["running statistics"] = relative("running statistics", running_cnnpar, running)
    # Per layer, for the record: where the differences are largest.
    at = 0
    layer_ratios = []
    for name, _, module in model.parameterised:
        count = sum(t.numel() for t in (module.weight, module.bias) if t is not None)
        theirs = torch.cat([t.grad.reshape(-1) for t in (module.weight, module.bias) if t is not None])
        ours = gradients[at:at + count]
        at += count
        scale = max(float(theirs.abs().max()), 1e-30)
        layer_ratios.append((float((ours - theirs).abs().max()) / scale, name))
    ratio, name = max(layer_ratios)
    print(f"  largest per-layer gradient ratio: {ratio:.3e} ({name}; for the record)")
    failed = [what for what, value in worst.items() if not value <= TOLERANCE]
    if failed:
        print(f"pytorch_graph_check: FAILED beyond {TOLERANCE:g}: {', '.join(failed)}", file=sys.stderr)
        return 1
    print(f"pytorch_graph_check: loss, logits, gradients and running statistics within {TOLERANCE:g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
