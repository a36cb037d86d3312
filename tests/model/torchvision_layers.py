#!/usr/bin/env python3
"""The graph zoo against torchvision's models, built locally (no weights): every conv, batchnorm
and fc layer of cnnpar's network has the parameter count, output shape and forward
multiply-accumulates of the torchvision module of the same name (dots as underscores), and
every such module has its layer. Exits 77 (ctest: skipped) when torchvision is not installed.

Usage: torchvision_layers.py CNNPAR
"""
import json
import subprocess
import sys

SKIP = 77

try:
    import torch
    import torchvision
except ImportError as error:
    print(f"torchvision_layers: skipped, torchvision is not installed ({error}); Debian: python3-torchvision")
    sys.exit(SKIP)

MODELS = {
    "resnet-18": lambda: torchvision.models.resnet18(),
    "resnet-34": lambda: torchvision.models.resnet34(),
    "resnet-50": lambda: torchvision.models.resnet50(),
    "googlenet": lambda: torchvision.models.googlenet(aux_logits=False, init_weights=False),
}
KINDS = {torch.nn.Conv2d: "conv", torch.nn.BatchNorm2d: "batchnorm", torch.nn.Linear: "fc"}


def module_rows(model):
    """Per conv/batchnorm/linear module: parameters, output shape (C, H, W) and MACs for one
    224x224 image, from a forward pass with hooks."""
    rows = {}

    def hook(name, module):
        def record(_, __, output):
            shape = list(output.shape[1:]) + [1] * (4 - output.dim())
            if isinstance(module, torch.nn.Conv2d):
                kh, kw = module.kernel_size
                macs = output.numel() * (module.in_channels // module.groups) * kh * kw
            elif isinstance(module, torch.nn.Linear):
                macs = module.in_features * module.out_features
            else:
                macs = 0
            rows[name.replace(".", "_")] = {
                "type": KINDS[type(module)],
                "parameters": sum(p.numel() for p in module.parameters()),
                "out": shape,
                "macs": macs,
            }
        return record

    for name, module in model.named_modules():
        if type(module) in KINDS:
            module.register_forward_hook(hook(name, module))
    model.eval()
    with torch.no_grad():
        model(torch.zeros(1, 3, 224, 224))
    return rows


def main():
    cnnpar = sys.argv[1]
    failures = 0
    for network, build in MODELS.items():
        ours = json.loads(subprocess.run([cnnpar, "layers", "--network", network, "--json", "-"], check=True,
                                         capture_output=True, text=True).stdout)
        layers = {row["name"]: row for row in ours["layers"] if row["type"] in ("conv", "batchnorm", "fc")}
        theirs = module_rows(build())
        problems = []
        for name in sorted(set(layers) | set(theirs)):
            if name not in layers:
                problems.append(f"{name}: a torchvision module without a cnnpar layer")
                continue
            if name not in theirs:
                problems.append(f"{name}: a cnnpar layer without a torchvision module")
                continue
            mine, ref = layers[name], theirs[name]
            for field, got, want in (("type", mine["type"], ref["type"]),
                                     ("parameters", mine["parameters"], ref["parameters"]),
                                     ("out", mine["out"], ref["out"]),
                                     ("macs", mine["forward_macs"], ref["macs"])):
                if got != want:
                    problems.append(f"{name}: {field} {got}, torchvision {want}")
        total_theirs = sum(p.numel() for p in build().parameters())
        if ours["parameters"] != total_theirs:
            problems.append(f"total parameters {ours['parameters']}, torchvision {total_theirs}")
        largest = max(abs(layers[n]["parameters"] - theirs[n]["parameters"]) for n in layers if n in theirs)
        print(f"{network}: {len(layers)} conv/batchnorm/fc layers, {ours['parameters']} parameters "
              f"(torchvision {total_theirs}), largest per-layer parameter difference {largest}, "
              f"{ours['forward_macs'] / 1e9:.4f} G MACs")
        for problem in problems:
            print(f"  FAIL {problem}")
        failures += len(problems)
    print(f"torchvision_layers: torchvision {torchvision.__version__}, {failures} difference(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
