"""A cnnpar network JSON (scenarios/networks/*.json) as a PyTorch module: the one builder that
scripts/bench_pytorch.py (throughput) and tests/real/pytorch_graph_check.py (numerics) share.

Layers read the outputs their `inputs` name (default: the layer before; the first reads the
network input): conv (with or without bias), batchnorm, relu, pool (max or average, global,
ceil mode), lrn, dropout, add, concat (channels), fc (flattening its input) and softmax, which
is left to the loss: forward returns the last fc layer's logits. Parameterised layers are kept
in file order, each weight then bias, which is cnnpar's flat weight order."""
import torch
import torch.nn as nn
import torch.nn.functional as F


def pair(value):
    return (value, value) if isinstance(value, int) else tuple(value)


class Network(nn.Module):
    def __init__(self, network):
        super().__init__()
        self.layers = network["layers"]
        self.modules_by_key = nn.ModuleDict()
        self.parameterised = []  # (name, kind, module) in file order
        self.reads = {}
        shape = network["input"]
        # One image through each layer as it is built: the fc layers' input sizes.
        samples = {None: torch.zeros(1, shape["channels"], shape["height"], shape["width"])}
        previous = None
        for layer in self.layers:
            name, kind = layer["name"], layer["type"]
            reads = layer.get("inputs", [previous])
            self.reads[name] = reads
            c_in = samples[reads[0]].shape[1]
            module = None
            if kind == "conv":
                module = nn.Conv2d(c_in, layer["maps"], pair(layer["kernel"]), stride=layer.get("stride", 1),
                                   padding=layer.get("pad", 0), bias=layer.get("bias", True))
            elif kind == "batchnorm":
                module = nn.BatchNorm2d(c_in, eps=layer.get("epsilon", 1e-5), momentum=layer.get("momentum", 0.1))
            elif kind == "fc":
                module = nn.Linear(samples[reads[0]][0].numel(), layer["outputs"])
            elif kind == "lrn":
                module = nn.LocalResponseNorm(layer.get("size", 5), layer.get("alpha", 1e-4), layer.get("beta", 0.75),
                                              layer.get("k", 1.0))
            elif kind == "dropout":
                module = nn.Dropout(layer.get("ratio", 0.5))
            elif kind not in ("relu", "pool", "add", "concat", "softmax"):
                raise ValueError(f"no PyTorch layer for a {kind} layer ({name})")
            if module is not None:
                self.modules_by_key[self.key(name)] = module
                if kind in ("conv", "batchnorm", "fc"):
                    self.parameterised.append((name, kind, module))
                module.eval()  # the sample must not move batchnorm's running statistics
            with torch.no_grad():
                samples[name] = self.run_layer(layer, [samples[r] for r in reads])
            if module is not None:
                module.train()
            previous = name
        self.classes = samples[previous].shape[1]

    @staticmethod
    def key(name):
        return name.replace(".", "_")

    def run_layer(self, layer, inputs):
        kind = layer["type"]
        x = inputs[0]
        if kind in ("conv", "batchnorm", "lrn", "dropout"):
            return self.modules_by_key[self.key(layer["name"])](x)
        if kind == "fc":
            return self.modules_by_key[self.key(layer["name"])](torch.flatten(x, 1))
        if kind == "relu":
            return F.relu(x)
        if kind == "pool":
            if layer.get("global", False):
                kernel, stride, pad = tuple(x.shape[2:]), 1, 0
            else:
                kernel = pair(layer["kernel"])
                stride, pad = layer.get("stride", kernel[0]), layer.get("pad", 0)
            ceil = layer.get("ceil", False)
            if layer.get("mode", "max") == "max":
                return F.max_pool2d(x, kernel, stride, pad, ceil_mode=ceil)
            return F.avg_pool2d(x, kernel, stride, pad, ceil_mode=ceil, count_include_pad=True)
        if kind == "add":
            y = inputs[0]
            for other in inputs[1:]:
                y = y + other
            return y
        if kind == "concat":
            return torch.cat(inputs, dim=1)
        return x  # softmax: the loss takes the logits

    def forward(self, images):
        outputs = {None: images}
        logits = None
        for layer in self.layers:
            name = layer["name"]
            outputs[name] = self.run_layer(layer, [outputs[r] for r in self.reads[name]])
            if layer["type"] == "fc":
                logits = outputs[name]
        return logits

    def tensors(self):
        """Weights then biases of the parameterised layers, in cnnpar's order."""
        for _, _, module in self.parameterised:
            for tensor in (module.weight, module.bias):
                if tensor is not None:
                    yield tensor

    def load_flat(self, flat):
        at = 0
        with torch.no_grad():
            for tensor in self.tensors():
                tensor.copy_(flat[at:at + tensor.numel()].view_as(tensor))
                at += tensor.numel()
        if at != flat.numel():
            raise ValueError(f"{flat.numel()} weights in the file, {at} in the model")

    def flat_gradients(self):
        return torch.cat([tensor.grad.reshape(-1) for tensor in self.tensors()])
