"""The scaling benchmark's synthetic model: a torchvision model's parameters, its compute
replaced by sleeps in proportion to each layer's FLOPs.

One synthetic layer stands for each torchvision module that owns parameters, at the same
path with parameters of the same names and shapes (so ``named_parameters()`` matches the
real model's, and so do the names the optimizers communicate under), chained in the real
forward order. A layer's forward sleeps ``compute_s * FORWARD_SHARE * share`` and its
backward twice that (share = the layer's FLOPs / the model's), then hands each of its
parameters a gradient of its shape: the gradient accumulators, and the hooks that
flock's optimizers and torch DDP put on them, fire layer by layer in reverse order, as
in a real backward pass. The data is one number: what is measured is the step around it.

    model = build("resnet50", compute_s=1.2)
    model(torch.zeros(1)).sum().backward()   # sleeps ~1.2 s in 161 pieces
"""

import time

import torch
import torch.nn as nn
import torchvision

FORWARD_SHARE = 1 / 3  # backward costs about twice the forward pass
MODELS = {"resnet50": torchvision.models.resnet50,
          "mobilenet_v2": torchvision.models.mobilenet_v2}
IMAGE = (1, 3, 224, 224)


class ComputeClock:
    """The accelerator's time line, played by sleeps.

    `virtual` is where the step would be if sleeps were exact: the compute asked for plus
    the CPU's own time between layers (hooks, launches, waits in forward pre-hooks), which
    delays the next layer as it would a real step. Sleeps go to that deadline, so one
    sleep's overshoot (the scheduler's wake-up delay, an artefact of emulating compute by
    sleeping) is taken out of the next. ``requested`` sums the compute asked for.
    """

    def __init__(self):
        self.virtual = self.returned = time.perf_counter()
        self.requested = 0.0

    def start(self):
        """A new pass starts now (called by the model's forward)."""
        self.virtual = self.returned = time.perf_counter()

    def run(self, seconds, work=None):
        """Returns work() after `seconds` of compute; work runs within that time."""
        began = time.perf_counter()
        self.virtual += began - self.returned  # the CPU's time since the last layer
        result = work() if work is not None else None
        self.virtual += max(seconds, time.perf_counter() - began)
        self.requested += seconds
        delay = self.virtual - time.perf_counter()
        if delay > 0:
            time.sleep(delay)  # blocks without using the CPU
        self.returned = time.perf_counter()
        return result


class _Compute(torch.autograd.Function):
    """Forward: sleep; backward: sleep, then a gradient for each of the layer's parameters."""

    @staticmethod
    def forward(ctx, layer, x, *params):
        ctx.layer = layer
        layer.clock.run(layer.forward_s)
        return x.clone()

    @staticmethod
    def backward(ctx, grad):
        layer = ctx.layer
        # Fresh zeros, made inside the layer's compute time: the accumulator takes them
        # as p.grad without a copy (zero_grad(set_to_none=True)), as a GPU writes them.
        grads = layer.clock.run(layer.backward_s, layer.new_gradients)
        return (None, grad, *grads)


class SyntheticLayer(nn.Module):
    """Parameters of the given names and shapes; forward and backward take set times."""

    def __init__(self, shapes, forward_s, backward_s, clock):
        super().__init__()
        for name, shape in shapes:
            self.register_parameter(name, nn.Parameter(torch.zeros(shape)))
        self.forward_s, self.backward_s = forward_s, backward_s
        self.clock = clock

    def forward(self, x):
        return _Compute.apply(self, x, *self._parameters.values())

    def new_gradients(self):
        return [torch.zeros_like(p) for p in self._parameters.values()]


class SyntheticModel(nn.Module):
    """Synthetic layers at the real model's module paths, run in the real forward order."""

    def __init__(self, layers, clock):
        super().__init__()
        self.clock = clock
        self.order = []  # a plain list: the layers are registered at their paths below
        for path, layer in layers:
            parent, parts = self, path.split(".")
            for part in parts[:-1]:
                if part not in parent._modules:
                    parent.add_module(part, nn.Module())
                parent = parent._modules[part]
            parent.add_module(parts[-1], layer)
            self.order.append(layer)

    def forward(self, x):
        self.clock.start()
        for layer in self.order:
            x = layer(x)
        return x


def _flops(module, output):
    """FLOPs of one call (multiply-adds count 2)."""
    if isinstance(module, nn.Conv2d):
        kernel = module.kernel_size[0] * module.kernel_size[1]
        return 2 * output.numel() * kernel * module.in_channels // module.groups
    if isinstance(module, nn.Linear):
        return 2 * module.in_features * output.numel()
    return 2 * output.numel()  # batch norm and the like: a scale and a shift per element


_SPECS = {}


def layer_specs(model):
    """[(module path, [(parameter name, shape)], FLOPs)] of the torchvision model's modules
    that own parameters, in the order its forward pass calls them (one 224x224 image)."""
    if model not in _SPECS:
        real = MODELS[model]()
        found, handles = [], []
        for path, module in real.named_modules():
            own = list(module.named_parameters(recurse=False))
            if own:
                def record(module, _inputs, output, path=path, own=own):
                    if path not in (entry[0] for entry in found):  # first call only
                        found.append((path, [(n, p.shape) for n, p in own],
                                      _flops(module, output)))
                handles.append(module.register_forward_hook(record))
        with torch.no_grad():
            real.eval()(torch.zeros(IMAGE))
        for handle in handles:
            handle.remove()
        _SPECS[model] = found
    return _SPECS[model]


def build(model, compute_s, clock=None):
    """The synthetic `model` whose forward + backward asks for compute_s seconds."""
    clock = clock or ComputeClock()
    specs = layer_specs(model)
    total = sum(flops for _, _, flops in specs)
    layers = []
    for path, shapes, flops in specs:
        share = compute_s * flops / total
        layers.append((path, SyntheticLayer(shapes, share * FORWARD_SHARE,
                                            share * (1 - FORWARD_SHARE), clock)))
    return SyntheticModel(layers, clock)
