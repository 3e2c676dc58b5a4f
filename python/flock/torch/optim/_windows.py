"""The asynchronous optimizers: parameters gossiped through window ops (Bluefog's
DistributedWinPutOptimizer, DistributedPullGetOptimizer, DistributedPushSumOptimizer).

Each parameter gets a window (its name: the optimizer's ``window_prefix`` + "." and the
parameter's name from ``model.named_parameters()``). The J-th training forward pass
(J = num_steps_per_communication) since the last exchange starts each parameter's
one-sided op from its module's forward pre-hook; step() waits for this rank's ops only
— never for another rank — combines what has arrived, then runs the wrapped
optimizer's update with the gradient computed at the pre-combination value:

  win_put    x ← W(x): x is put into each out-neighbour's window (``dst_weights``, may
             change every step), then x := win_update (the topology's weights, or
             1/(in-degree+1)) of x and the latest values the in-neighbours put;
  pull_get   the in-neighbours' current values are fetched (``src_weights``), then
             x := win_update as above;
  push_sum   (x·w, w) shares go to the out-neighbours by accumulation (``dst_weights``,
             ``self_weight``: 1/(out-degree+1) each), the shares that arrived are
             collected and x := numerator / w. The sums of numerators and weights never
             change, so the ranks' values tend to their average even on a directed
             graph. (Bluefog's version keeps the numerator of its previous collect
             instead of the updated parameter; flock pushes the parameter after its
             update, as push-sum SGD intends.)

The windows are freed by ``unregister_window()`` or when the optimizer is collected
(both collective: do it at the same point on every rank).
"""

import weakref

import torch

from flock._core_loader import core
from flock._public import public
from flock.torch import ops, windows
from flock.torch.optim._base import DistributedOptimizerMixin


def _free(names):
    """The finalizer's part: frees what is left, if flock still runs."""
    if not core.is_initialized():
        return
    for name in names:
        if name in windows.get_current_created_window_names():
            windows.win_free(name)


class WindowOptimizerMixin(DistributedOptimizerMixin):
    """Windows per parameter, launched from forward pre-hooks; step() combines."""

    _flock_kind = "window"

    def _flock_setup(self, model, num_steps_per_communication, window_prefix):
        self.force_barrier = False
        self._flock_window_prefix = window_prefix + "." if window_prefix else ""
        self._flock_passes = 0
        self._flock_window_names = {}
        super()._flock_setup(model, num_steps_per_communication)
        for p in self._flock_params():
            name = self._flock_window_prefix + self._flock_names[p]
            self._flock_create_window(p, name)
            self._flock_window_names[p] = name
        self._flock_finalizer = weakref.finalize(self, _free, list(self._flock_window_names.values()))
        self._flock_hook_forward(model, WindowOptimizerMixin._flock_count_forward,
                                 WindowOptimizerMixin._flock_forward,
                                 set(self._flock_window_names))

    def _flock_create_window(self, p, name):
        if not windows.win_create(p.data, name):
            raise ValueError("cannot create the window of parameter {!r}".format(name))

    def _flock_count_forward(self, _params):
        if torch.is_grad_enabled() and self._flock_model.training:
            self._flock_passes += 1

    def _flock_due(self):
        return self._flock_model is None or self._flock_passes >= self.num_steps_per_communication

    def _flock_forward(self, params):
        if not torch.is_grad_enabled() or not self._flock_due():
            return
        for p in params:
            if p not in self._flock_handles:
                self._flock_handles[p] = self._flock_launch(p, self._flock_window_names[p])

    @public
    def synchronize(self):
        """Waits for this rank's window ops and combines (every rank's own pace)."""
        if not self._flock_due() and not self._flock_handles:
            return
        for p in self._flock_params():
            if p not in self._flock_handles:
                self._flock_handles[p] = self._flock_launch(p, self._flock_window_names[p])
        self._flock_wait_all()
        if self.force_barrier:  # after this rank's ops landed: every rank combines the same round
            ops.barrier()
        with torch.no_grad():
            for p, name in self._flock_window_names.items():
                self._flock_combine(p, name)
        self._flock_passes = 0

    @public
    def step(self, closure=None):
        loss = self._flock_closure(closure)
        if not self._flock_skip:
            self.synchronize()
        super().step()
        return loss

    @public
    def unregister_window(self):
        """Frees this optimizer's windows (collective)."""
        self._flock_finalizer()


class WinPutMixin(WindowOptimizerMixin):
    _flock_kind = "win_put"

    def _flock_setup(self, model, num_steps_per_communication, window_prefix):
        self.dst_weights = None
        super()._flock_setup(model, num_steps_per_communication, window_prefix)

    def _flock_launch(self, p, name):
        return windows.win_put_nonblocking(p.data, name, dst_weights=self.dst_weights)

    def _flock_combine(self, p, name):
        windows.win_update(name, require_mutex=True)  # into p's own storage


class PullGetMixin(WindowOptimizerMixin):
    _flock_kind = "pull_get"

    def _flock_setup(self, model, num_steps_per_communication, window_prefix):
        self.src_weights = None
        super()._flock_setup(model, num_steps_per_communication, window_prefix)

    def _flock_launch(self, p, name):
        return windows.win_get_nonblocking(name, src_weights=self.src_weights,
                                           require_mutex=True)

    def _flock_combine(self, p, name):
        windows.win_update(name, require_mutex=True)


class PushSumMixin(WindowOptimizerMixin):
    _flock_kind = "push_sum"

    def _flock_setup(self, model, num_steps_per_communication, window_prefix):
        outs = ops_out_neighbors()
        share = 1.0 / (len(outs) + 1)
        self.dst_weights = {r: share for r in outs}
        self.self_weight = share
        self._flock_extended = {}  # parameter -> its window tensor [numerator..., weight]
        super()._flock_setup(model, num_steps_per_communication, window_prefix)
        self.force_barrier = True

    def _flock_create_window(self, p, name):
        extended = torch.cat([p.detach().reshape(-1), p.new_ones(1)])
        if not windows.win_create(extended, name, zero_init=True):
            raise ValueError("cannot create the window of parameter {!r}".format(name))
        self._flock_extended[p] = extended

    def _flock_launch(self, p, name):
        extended = self._flock_extended[p]
        with torch.no_grad():
            extended[:-1].copy_(p.detach().reshape(-1)).mul_(extended[-1])
        return windows.win_accumulate_nonblocking(extended, name, self_weight=self.self_weight,
                                                  dst_weights=self.dst_weights,
                                                  require_mutex=True)

    def _flock_combine(self, p, name):
        extended = windows.win_update_then_collect(name)
        p.copy_((extended[:-1] / extended[-1]).reshape(p.shape))


def ops_out_neighbors():
    return list(core.out_neighbor_ranks())


__all__ = ["WinPutMixin", "PullGetMixin", "PushSumMixin"]
