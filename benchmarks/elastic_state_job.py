"""The elastic benchmark's job: a TorchState of the digits model or of ResNet-50's size,
committed every few steps, every moment of a launch and a restore time-stamped.

    flockrun --elastic -np 4 python benchmarks/elastic_state_job.py --state resnet50 \\
        --steps 30 --commit-every 5 --fail-at-step 12

Run by benchmarks/bench_elastic.py, which reads its lines. Every rank prints
``EV <event> rank=R launch=L t=<time.time()> key=value...`` (one clock for the
job and the driver: the same machine):

- ``start``: when the script began (``at``, before ``import torch``) and had imported
  torch and flock (``imported``); ``init``: after ``bf.init()``;
- ``ready``: the state is built, ``train(state)`` is being called (the restore follows);
- ``train``: the first line inside ``train``: the state is restored; with the time
  spent reading and verifying the commit's data into the model (rank 0, ``load_s``;
  rank 0 broadcasts what it has read meanwhile), in the library's broadcasts
  (``share_s``: the skeleton, the decisions, waiting for the blocks), and unpickling
  the skeleton, binding it to the model and optimizer and applying it (``apply_s``);
- ``commit``: after each ``state.commit()``: its time (``commit_s``), of which
  packing and copying for restore() (``serialize_s``) and, on rank 0, writing and
  fsyncing (``save_s``);
- ``kill``: --fail-at-step: the last rank of launch 1 SIGKILLs itself right after.

The step is a sleep, one small allreduce (to keep the ranks in step, so that a
lost rank is noticed as it is in training) and the optimizer's update: the
gradient exchange is left out, since what is measured is the commit, the failure
and the restore, not a step. "resnet50" is ResNet-50's parameter set (25.6 M
float32, built from its shapes, no torchvision needed) plus its batch-norm
statistics; SGD with momentum doubles it in the committed state.
"""

import time

T_START = time.time()  # before the imports, which are part of a relaunch's cost

import argparse  # noqa: E402
import os  # noqa: E402
import signal  # noqa: E402

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402

import flock.elastic._commit_store as commit_store  # noqa: E402  (timed, see make_state)
import flock.elastic._state as state_module  # noqa: E402  (timed, see make_state)
import flock.torch as bf  # noqa: E402

T_IMPORTED = time.time()
# ResNet-50's stages: (bottleneck width, blocks); the first block of each downsamples.
RESNET50_STAGES = ((64, 3), (128, 4), (256, 6), (512, 3))
TIMES = {}  # what the wrappers below measured last: name -> seconds


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--state", choices=["digits", "resnet50"], default="digits")
    p.add_argument("--steps", type=int, default=30, help="steps of the whole job")
    p.add_argument("--step-ms", type=float, default=50.0)
    p.add_argument("--commit-every", type=int, default=5)
    p.add_argument("--fail-at-step", type=int, default=-1,
                   help="the last rank of launch 1 SIGKILLs itself at this step")
    return p.parse_args(argv)


def emit(event, **values):
    extra = " ".join(f"{k}={v:.6f}" if isinstance(v, float) else f"{k}={v}"
                     for k, v in values.items())
    print(f"EV {event} rank={bf.rank()} launch={os.environ.get('FLOCK_ELASTIC_LAUNCH', '0')} "
          f"t={time.time():.6f} {extra}", flush=True)


def resnet50_shapes():
    """(name, shape) of ResNet-50's parameters, in torchvision's order and names."""
    shapes = [("conv1.weight", (64, 3, 7, 7)), ("bn1.weight", (64,)), ("bn1.bias", (64,))]
    inplanes = 64
    for stage, (width, blocks) in enumerate(RESNET50_STAGES, start=1):
        for block in range(blocks):
            prefix = f"layer{stage}.{block}"
            convs = [(width, inplanes, 1, 1), (width, width, 3, 3), (width * 4, width, 1, 1)]
            for i, conv in enumerate(convs, start=1):
                shapes.append((f"{prefix}.conv{i}.weight", conv))
                shapes += [(f"{prefix}.bn{i}.weight", (conv[0],)),
                           (f"{prefix}.bn{i}.bias", (conv[0],))]
            if block == 0:
                shapes.append((f"{prefix}.downsample.0.weight", (width * 4, inplanes, 1, 1)))
                shapes += [(f"{prefix}.downsample.1.weight", (width * 4,)),
                           (f"{prefix}.downsample.1.bias", (width * 4,))]
            inplanes = width * 4
    return shapes + [("fc.weight", (1000, 2048)), ("fc.bias", (1000,))]


class ParameterSet(nn.Module):
    """Parameters (and batch-norm statistics) of the given shapes; no forward pass."""

    def __init__(self, shapes):
        super().__init__()
        for name, shape in shapes:
            # Dotted names are not allowed for parameters: keep the path, change the dots.
            key = name.replace(".", "__")
            self.register_parameter(key, nn.Parameter(torch.randn(shape) * 0.01))
            if len(shape) == 1 and name.endswith(".weight"):  # a batch norm's
                base = key[:-len("weight")]
                self.register_buffer(base + "running_mean", torch.zeros(shape))
                self.register_buffer(base + "running_var", torch.ones(shape))


def build_model(kind):
    torch.manual_seed(0)  # rank 0's state reaches the others anyway (the first sync)
    if kind == "resnet50":
        return ParameterSet(resnet50_shapes())
    return nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10))  # the digits MLP


def timed(name, func):
    def wrapper(*args, **kwargs):
        began = time.perf_counter()
        try:
            return func(*args, **kwargs)
        finally:
            TIMES[name] = TIMES.get(name, 0.0) + time.perf_counter() - began
    return wrapper


class TimedState(bf.elastic.TorchState):
    """TorchState whose packing (rank 0's commit), binding and loading are timed."""

    def _pack(self, **meta):
        return timed("serialize_s", super()._pack)(**meta)

    def _keep(self, skeleton, blocks):
        return timed("serialize_s", super()._keep)(skeleton, blocks)

    def _load(self, skeleton):
        loaded = timed("apply_s", super()._load)(skeleton)
        loaded.finish = timed("apply_s", loaded.finish)
        return loaded


def make_state(args):
    model = build_model(args.state)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    for p in model.parameters():
        p.grad = torch.full_like(p, 1e-4)  # a fixed gradient: the update runs, cheaply
    state = TimedState(model, optimizer, step=0)
    # The library's broadcast and the commit store, timed from the outside.
    state_module.share = timed("share_s", state_module.share)
    state_module.share_blocks = timed("share_s", state_module.share_blocks)
    if state._store is not None:  # rank 0's read of the data (the broadcast overlaps it)
        commit_store.OpenCommit.read_data = timed("load_s", commit_store.OpenCommit.read_data)
        state._store.save = timed("save_s", state._store.save)
    return state, optimizer


def take_times():
    values = {k: v for k, v in TIMES.items()}
    TIMES.clear()
    return values


def step(args, state, optimizer, ticker):
    time.sleep(args.step_ms / 1e3)
    bf.allreduce(ticker, name="bench.tick")
    optimizer.step()
    state.step += 1
    first_launch = os.environ.get("FLOCK_ELASTIC_LAUNCH", "1") == "1"
    if first_launch and state.step == args.fail_at_step and bf.rank() == bf.size() - 1:
        emit("kill", step=state.step)
        os.kill(os.getpid(), signal.SIGKILL)


def main():
    args = parse_args()
    torch.set_num_threads(1)
    bf.init()
    emit("start", at=T_START, imported=T_IMPORTED)
    emit("init")
    state, optimizer = make_state(args)
    ticker = torch.zeros(1)
    TIMES.clear()

    @bf.elastic.run
    def train(state):
        emit("train", step=state.step, **take_times())
        while state.step < args.steps:
            step(args, state, optimizer, ticker)
            if state.step % args.commit_every == 0:
                began = time.perf_counter()
                try:
                    state.commit()
                finally:  # also when the commit ends the launch to change its hosts
                    emit("commit", step=state.step, commit_s=time.perf_counter() - began,
                         **take_times())

    emit("ready")
    train(state)
    emit("done", step=state.step)


if __name__ == "__main__":
    main()
