"""Overlap across the step boundary: adapt-then-combine's exchange waited for in the next
forward pass instead of in step().

An exchanging step() of the adapt-then-combine optimizer launches whatever the backward
hooks did not, and returns without waiting. Each parameter's combination is written into
it by the forward pre-hook of a module that owns it, in the next forward pass (training or
evaluation), just before the module reads it; the exchange of the layers a forward pass
reaches late hides behind the layers it reaches early. The result is what waiting in
step() gives (the same values combined the same way; as in any neighbor op, the sources
are summed in arrival order, so the last bit may differ between runs), because no one
reads a parameter between step() and its module's forward pass — except code outside a
forward pass, so the combination is also written by:

- ``optimizer.synchronize()`` (after step(): it only finishes what step() left),
- ``module.state_dict()`` of any module owning deferred parameters (checkpoints,
  ``broadcast_parameters(model.state_dict())``), and ``module.load_state_dict()`` first
  finishes the exchange so the loaded values are not overwritten,
- the next ``step()``, for parameters no forward pass reached.

A parameter read by a forward pass without its module's forward running (a weight used
functionally from another module) would read the uncombined value: its gradient hook
sees that the combination was never taken and raises, naming the switch
(``overlap_next_forward=False``) that makes step() wait instead.
"""

import weakref

import torch

from flock.torch.optim._base import _inert_hook_factory


class DeferredCombineMixin:
    """The deferred half of AdaptThenCombineMixin (which provides the launching half)."""

    def _flock_setup_deferral(self, model, overlap_next_forward):
        self.overlap_next_forward = bool(overlap_next_forward)
        self._flock_deferred = {}  # parameter -> handle of its exchange left by step()
        if model is None:
            return
        for module in model.modules():
            if not any(True for _ in module.parameters(recurse=False)):
                continue
            hook = _ModuleHook(self, module)
            removers = [module.register_forward_pre_hook(hook),
                        module._register_state_dict_hook(hook),
                        module._register_load_state_dict_pre_hook(hook)]
            for remover in removers:
                weakref.finalize(self, remover.remove)

    def _flock_defers(self):
        """Whether an exchanging step() leaves its exchange to the next forward pass."""
        return (self.overlap_next_forward and self._flock_model is not None and
                not self._flock_synchronized)

    def _flock_defer_handles(self):
        self._flock_deferred.update(self._flock_handles)
        self._flock_handles = {}

    def _flock_take_deferred(self, params):
        """Waits for the deferred exchanges of `params` and writes their combinations.
        Returns whether there were any."""
        handles = {p: self._flock_deferred.pop(p) for p in params if p in self._flock_deferred}
        if handles:
            self._flock_write(self._flock_wait(handles))
        return bool(handles)

    def _flock_flush_deferred(self):
        return self._flock_take_deferred(list(self._flock_deferred))

    def _flock_check_not_deferred(self, p):
        """Called when p's gradient is ready: the pass must have read p's combination."""
        if p not in self._flock_deferred:
            return
        self._flock_flush_deferred()  # the parameters end combined; this pass is void
        raise RuntimeError(
            "parameter {!r} was used in a forward pass before the combination the last "
            "step() left in flight was written into it: it is read outside the forward of "
            "the module that owns it, whose forward pre-hook writes it. Pass "
            "overlap_next_forward=False to the optimizer (step() then waits), or call "
            "optimizer.synchronize() after step()".format(self._flock_names.get(p)))


class _ModuleHook:
    """Forward pre-hook, state_dict hook and load_state_dict pre-hook of one module:
    writes the deferred combinations of the module's own parameters. Weak: it neither
    keeps the optimizer nor the module alive, and pickles as an inert hook."""

    def __init__(self, optimizer, module):
        self._optimizer = weakref.ref(optimizer)
        self._module = weakref.ref(module)

    def __call__(self, *_):
        optimizer, module = self._optimizer(), self._module()
        if optimizer is not None and module is not None and optimizer._flock_deferred:
            with torch.no_grad():
                optimizer._flock_take_deferred(list(module.parameters(recurse=False)))
        return None  # a state_dict hook's non-None result would replace the state dict

    def __reduce__(self):
        return (_inert_hook_factory, ())
