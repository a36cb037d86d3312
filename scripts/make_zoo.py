#!/usr/bin/env python3
"""Writes the graph networks of the zoo (scenarios/networks/): ResNet-18/34/50, ResNet-20/56
for CIFAR, GoogLeNet and resnet-18-32. Each layout is written out from its paper table, with
torchvision's module names (dots as underscores) so tests/model/torchvision_params.py can
compare them layer by layer.

Usage: python3 scripts/make_zoo.py [OUT_DIR]   (default scenarios/networks)
"""
import json
import sys
from pathlib import Path


class Builder:
    def __init__(self):
        self.layers = []

    def last(self):
        return self.layers[-1]["name"]

    def add(self, name, kind, inputs=None, **fields):
        layer = {"name": name, "type": kind}
        if inputs is not None and (len(inputs) != 1 or not self.layers or inputs[0] != self.last()):
            layer["inputs"] = inputs
        layer.update(fields)
        self.layers.append(layer)
        return name

    def conv_bn(self, name, bn, maps, kernel, stride=1, pad=0, inputs=None, relu=None, eps=None):
        """conv (no bias: batchnorm's shift takes its place), batchnorm, optional relu."""
        self.add(name, "conv", inputs, maps=maps, kernel=kernel, stride=stride, pad=pad, bias=False)
        fields = {} if eps is None else {"epsilon": eps}
        out = self.add(bn, "batchnorm", **fields)
        if relu:
            out = self.add(relu, "relu")
        return out


def basic_block(b, prefix, maps, stride, project):
    """He et al. Fig. 2 (left): two 3x3 convs; a 1x1 projection when the shape changes."""
    block_input = b.last()
    b.conv_bn(f"{prefix}_conv1", f"{prefix}_bn1", maps, 3, stride, 1, relu=f"{prefix}_relu1")
    main = b.conv_bn(f"{prefix}_conv2", f"{prefix}_bn2", maps, 3, 1, 1)
    shortcut = block_input
    if project:
        shortcut = b.conv_bn(f"{prefix}_downsample_0", f"{prefix}_downsample_1", maps, 1, stride, 0,
                             inputs=[block_input])
    b.add(f"{prefix}_add", "add", [main, shortcut])
    b.add(f"{prefix}_relu", "relu")


def bottleneck_block(b, prefix, width, stride, project):
    """He et al. Fig. 5 (right), torchvision's layout: 1x1, 3x3 (carrying the stride), 1x1 to 4x width."""
    block_input = b.last()
    b.conv_bn(f"{prefix}_conv1", f"{prefix}_bn1", width, 1, 1, 0, relu=f"{prefix}_relu1")
    b.conv_bn(f"{prefix}_conv2", f"{prefix}_bn2", width, 3, stride, 1, relu=f"{prefix}_relu2")
    main = b.conv_bn(f"{prefix}_conv3", f"{prefix}_bn3", 4 * width, 1, 1, 0)
    shortcut = block_input
    if project:
        shortcut = b.conv_bn(f"{prefix}_downsample_0", f"{prefix}_downsample_1", 4 * width, 1, stride, 0,
                             inputs=[block_input])
    b.add(f"{prefix}_add", "add", [main, shortcut])
    b.add(f"{prefix}_relu", "relu")


def imagenet_resnet(name, blocks, bottleneck, source):
    b = Builder()
    b.conv_bn("conv1", "bn1", 64, 7, 2, 3, relu="relu")
    b.add("maxpool", "pool", mode="max", kernel=3, stride=2, pad=1)
    channels = 64
    for stage, count in enumerate(blocks):
        width = 64 << stage
        for i in range(count):
            stride = 2 if stage > 0 and i == 0 else 1
            prefix = f"layer{stage + 1}_{i}"
            if bottleneck:
                bottleneck_block(b, prefix, width, stride, project=(i == 0))
                channels = 4 * width
            else:
                basic_block(b, prefix, width, stride, project=(stride != 1 or channels != width))
                channels = width
    b.add("avgpool", "pool", mode="avg", **{"global": True})
    b.add("fc", "fc", outputs=1000)
    b.add("prob", "softmax")
    return {"name": name, "source": source, "input": {"channels": 3, "height": 224, "width": 224}, "layers": b.layers}


def small_resnet(name, source, stem_maps, stages):
    """A 32x32-input ResNet of basic blocks: a 3x3 conv stem with stride 1 and no max-pool, then
    `stages` as (maps, blocks), each stage after the first halving the pixels, global average
    pooling and a 10-way fc."""
    b = Builder()
    b.conv_bn("conv1", "bn1", stem_maps, 3, 1, 1, relu="relu")
    channels = stem_maps
    for stage, (maps, blocks) in enumerate(stages):
        for i in range(blocks):
            stride = 2 if stage > 0 and i == 0 else 1
            basic_block(b, f"layer{stage + 1}_{i}", maps, stride, project=(stride != 1 or channels != maps))
            channels = maps
    b.add("avgpool", "pool", mode="avg", **{"global": True})
    b.add("fc", "fc", outputs=10)
    b.add("prob", "softmax")
    return {"name": name, "source": source, "input": {"channels": 3, "height": 32, "width": 32}, "layers": b.layers}


def cifar_resnet(name, n, source):
    """He et al. Sec. 4.2: 3x3 conv of 16 maps, then 3 stages of n basic blocks (16, 32, 64 maps
    on 32, 16, 8 pixels); 6n + 2 layers."""
    return small_resnet(name, source, 16, [(16, n), (32, n), (64, n)])


def resnet18_32():
    source = ("ResNet-18 (He et al. 2016, Table 1, 18-layer column; torchvision's layout) adapted to CIFAR-10-sized "
              "3x32x32 inputs and 10 classes for real training on a small machine: the stem is one 3x3 conv of 64 "
              "maps with stride 1 and no max-pool (our choice, as in common CIFAR-10 ports), so the four stages run "
              "on 32, 16, 8 and 4 pixels; global average pooling, fc 512 -> 10.")
    return small_resnet("resnet-18-32", source, 64, [(64, 2), (128, 2), (256, 2), (512, 2)])


def googlenet():
    """Szegedy et al. 2015, Table 1, as torchvision builds it (without the auxiliary classifiers):
    each conv is a BasicConv2d (conv without bias, batchnorm eps 0.001, relu), the max-pools use
    ceil mode, and the 5x5 branch of an Inception module is a 3x3 conv (torchvision's known
    departure, kept so the parameter counts compare)."""
    b = Builder()
    eps = 0.001

    def basic(prefix, maps, kernel, stride=1, pad=0, inputs=None):
        return b.conv_bn(f"{prefix}_conv", f"{prefix}_bn", maps, kernel, stride, pad, inputs=inputs,
                         relu=f"{prefix}_relu", eps=eps)

    def inception(prefix, ch1, ch3r, ch3, ch5r, ch5, pool_proj):
        block_input = b.last()
        b1 = basic(f"{prefix}_branch1", ch1, 1, inputs=[block_input])
        basic(f"{prefix}_branch2_0", ch3r, 1, inputs=[block_input])
        b2 = basic(f"{prefix}_branch2_1", ch3, 3, pad=1)
        basic(f"{prefix}_branch3_0", ch5r, 1, inputs=[block_input])
        b3 = basic(f"{prefix}_branch3_1", ch5, 3, pad=1)
        b.add(f"{prefix}_branch4_0", "pool", [block_input], mode="max", kernel=3, stride=1, pad=1, ceil=True)
        b4 = basic(f"{prefix}_branch4_1", pool_proj, 1)
        b.add(f"{prefix}_concat", "concat", [b1, b2, b3, b4])

    basic("conv1", 64, 7, 2, 3)
    b.add("maxpool1", "pool", mode="max", kernel=3, stride=2, ceil=True)
    basic("conv2", 64, 1)
    basic("conv3", 192, 3, pad=1)
    b.add("maxpool2", "pool", mode="max", kernel=3, stride=2, ceil=True)
    inception("inception3a", 64, 96, 128, 16, 32, 32)
    inception("inception3b", 128, 128, 192, 32, 96, 64)
    b.add("maxpool3", "pool", mode="max", kernel=3, stride=2, ceil=True)
    inception("inception4a", 192, 96, 208, 16, 48, 64)
    inception("inception4b", 160, 112, 224, 24, 64, 64)
    inception("inception4c", 128, 128, 256, 24, 64, 64)
    inception("inception4d", 112, 144, 288, 32, 64, 64)
    inception("inception4e", 256, 160, 320, 32, 128, 128)
    b.add("maxpool4", "pool", mode="max", kernel=2, stride=2, ceil=True)
    inception("inception5a", 256, 160, 320, 32, 128, 128)
    inception("inception5b", 384, 192, 384, 48, 128, 128)
    b.add("avgpool", "pool", mode="avg", **{"global": True})
    b.add("dropout", "dropout", ratio=0.2)
    b.add("fc", "fc", outputs=1000)
    b.add("prob", "softmax")
    source = ("GoogLeNet (Szegedy et al. 2015, Table 1) without the auxiliary classifiers, as torchvision builds it: "
              "every conv followed by batchnorm (eps 0.001) and relu, convs without bias, max-pools in ceil mode, "
              "the 5x5 branch as a 3x3 conv (torchvision's departure), dropout 0.2 before the 1000-way fc.")
    return {"name": "googlenet", "source": source, "input": {"channels": 3, "height": 224, "width": 224},
            "layers": b.layers}


def zoo():
    tv = "torchvision's layout: bottleneck 3x3 convs carry the stride (v1.5), 1x1 projection shortcuts where the shape changes, convs without bias, batchnorm after each conv"
    yield imagenet_resnet("resnet-18", [2, 2, 2, 2], False, f"ResNet-18 (He et al. 2016, Table 1, 18-layer column), ImageNet 224x224; {tv}.")
    yield imagenet_resnet("resnet-34", [3, 4, 6, 3], False, f"ResNet-34 (He et al. 2016, Table 1, 34-layer column), ImageNet 224x224; {tv}.")
    yield imagenet_resnet("resnet-50", [3, 4, 6, 3], True, f"ResNet-50 (He et al. 2016, Table 1, 50-layer column), ImageNet 224x224; {tv}.")
    cifar = ("(He et al. 2016, Sec. 4.2 and Table 6), CIFAR-10 32x32: 3x3 conv of 16 maps, three stages of {n} basic "
             "blocks on 16, 32 and 64 maps, global average pooling, 10-way fc; where the maps double, a 1x1 projection "
             "shortcut (the paper's option B) instead of its zero-padded identity (option A), which an add of equal "
             "shapes cannot express.")
    yield cifar_resnet("resnet-20", 3, "ResNet-20 " + cifar.format(n=3))
    yield cifar_resnet("resnet-56", 9, "ResNet-56 " + cifar.format(n=9))
    yield googlenet()
    yield resnet18_32()


def write(network, path):
    lines = ["{", f'  "name": {json.dumps(network["name"])},', f'  "source": {json.dumps(network["source"])},',
             f'  "input": {json.dumps(network["input"])},', '  "layers": [']
    lines += [f"    {json.dumps(layer)}," for layer in network["layers"]]
    lines[-1] = lines[-1].rstrip(",")
    lines += ["  ]", "}"]
    text = "\n".join(lines) + "\n"
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(text)
    tmp.replace(path)


def main():
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "scenarios/networks")
    for network in zoo():
        write(network, out / f"{network['name']}.json")
        print(f"{out / (network['name'] + '.json')}: {len(network['layers'])} layers")


if __name__ == "__main__":
    main()
