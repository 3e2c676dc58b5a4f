"""DistributedGradientAllreduceOptimizer: every rank applies the average gradient.

Each parameter's gradient is averaged over all ranks with allreduce, launched
from the backward pass as soon as that gradient is complete, so the
communication of late layers overlaps the backward pass of early ones.

num_steps_per_communication = J accumulates gradients locally: call backward J
times, then step() once; the gradients are averaged after the J-th backward
pass (a step() called earlier averages what has accumulated so far). A
parameter no rank used gets zeros averaged (every rank must take part), so
momentum and weight decay still move it, as with Horovod.
"""

import torch

from flock.torch import ops
from flock.torch.optim._base import DistributedOptimizerMixin
from flock._public import public


class GradientAllreduceMixin(DistributedOptimizerMixin):
    _flock_kind = "gradient_allreduce"

    def _flock_setup(self, model, num_steps_per_communication, compression=None):
        self._flock_passes = {}  # parameter -> backward passes since the last step
        super()._flock_setup(model, num_steps_per_communication, compression)

    def _flock_register(self, p):
        # Counted before the gradient is added into p.grad, so a pass too many is refused
        # before it touches a gradient that is being allreduced.
        p.register_hook(self._flock_weak(GradientAllreduceMixin._flock_count_pass, p))
        self._flock_on_gradient(p, GradientAllreduceMixin._flock_gradient_ready)

    def _flock_count_pass(self, p):
        passes = self._flock_passes.get(p, 0) + 1
        if passes > self.num_steps_per_communication:
            raise RuntimeError(
                "parameter {!r} got {} backward passes before step(), more than "
                "num_steps_per_communication={}: call step() after every {} backward passes"
                .format(self._flock_names.get(p), passes, self.num_steps_per_communication,
                        self.num_steps_per_communication))
        self._flock_passes[p] = passes

    def _flock_gradient_ready(self, p):
        if self._flock_passes.get(p, 0) == self.num_steps_per_communication:
            self._flock_launch(p)

    def _flock_launch(self, p):
        if p.grad is None:
            p.grad = torch.zeros_like(p)  # every rank must take part
        self._flock_handles[p] = ops.allreduce_nonblocking_(
            p.grad, average=True, name=self._flock_name(p, "grad"), compression=self.compression)

    @public
    def synchronize(self):
        """Waits until every gradient holds its average over the ranks.

        Call it before touching gradients between backward and step (clipping); step()
        then does not communicate again (``with optimizer.skip_synchronize():`` says so
        explicitly).
        """
        if self._flock_synchronized:
            return
        for p in self._flock_params():
            if p not in self._flock_handles:
                self._flock_launch(p)
        try:
            self._flock_wait_all()  # in place: the averages are in p.grad
        finally:
            self._flock_passes.clear()
        self._flock_synchronized = True

    @public
    def step(self, closure=None):
        loss = self._flock_closure(closure)
        if not self._flock_skip:
            self.synchronize()
        self._flock_synchronized = False
        super().step()
        return loss
