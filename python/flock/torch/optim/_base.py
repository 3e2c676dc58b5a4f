"""What every distributed optimizer shares.

Wrapping: the user's optimizer object gets a class of its own that derives from
both the distributed behaviour (a mixin below) and the optimizer's class, so it
stays that optimizer — its update rule, hyperparameters, state, ``state_dict``,
``param_groups``, learning-rate schedulers and ``isinstance`` checks all work as
before — and only ``step`` (and ``synchronize``) learn to communicate.

Names: each parameter communicates under a name taken from
``model.named_parameters()`` (the same on every rank), so ranks may launch their
parameters in any order. Parameters the model does not name get
``group<g>.param<i>``.

Hooks: communication is launched from autograd hooks on each parameter's
gradient accumulator (the node that adds a backward pass's gradient into
``p.grad``; its hook runs once that is done), or from forward pre-hooks on the
modules that own parameters, so it overlaps the rest of the pass.
"""

import contextlib
import numbers
import weakref

import torch

from flock.torch import ops


class DistributedOptimizerMixin:
    """Bookkeeping shared by the gradient-allreduce and combine optimizers."""

    _flock_kind = "distributed"  # prefix of the communication names

    def _flock_setup(self, model, num_steps_per_communication):
        if isinstance(num_steps_per_communication, bool) or not isinstance(
                num_steps_per_communication, numbers.Integral) or num_steps_per_communication < 1:
            raise ValueError("num_steps_per_communication must be an integer >= 1, got {!r}"
                             .format(num_steps_per_communication))
        self.num_steps_per_communication = int(num_steps_per_communication)
        self._flock_model = model
        self._flock_handles = {}  # parameter -> handle of its communication in flight
        self._flock_skip = False
        self._flock_hooked = set()  # parameters whose hooks are registered
        self._flock_hook_refs = []  # keeps gradient accumulators (and so their hooks) alive
        self._flock_names = {}
        named = dict(model.named_parameters()) if model is not None else {}
        by_param = {p: name for name, p in named.items()}
        for g, group in enumerate(self.param_groups):
            for i, p in enumerate(group["params"]):
                self._flock_names[p] = by_param.get(p, "group{}.param{}".format(g, i))
        self._flock_register_all()

    # --- parameters and names

    def _flock_params(self):
        """The parameters to communicate, in param_groups order."""
        for group in self.param_groups:
            for p in group["params"]:
                if p.requires_grad:
                    yield p

    def _flock_name(self, p, what):
        return "{}.{}.{}".format(self._flock_kind, what, self._flock_names.get(p, id(p)))

    def add_param_group(self, param_group):
        super().add_param_group(param_group)
        if getattr(self, "_flock_names", None) is None:
            return  # the optimizer's own __init__ (before wrapping)
        g = len(self.param_groups) - 1
        for i, p in enumerate(self.param_groups[-1]["params"]):
            self._flock_names.setdefault(p, "group{}.param{}".format(g, i))
        self._flock_register_all()

    # --- hooks

    def _flock_register_all(self):
        for p in self._flock_params():
            if p in self._flock_hooked:
                continue
            self._flock_hooked.add(p)
            self._flock_register(p)

    def _flock_register(self, p):
        """Registers what launches p's communication (subclasses)."""

    def _flock_on_gradient(self, p, method):
        """Calls self.method(p) each time a backward pass has added its gradient into p.grad."""
        accumulator = p.expand_as(p).grad_fn.next_functions[0][0]
        accumulator.register_hook(self._flock_weak(method, p))
        self._flock_hook_refs.append(accumulator)

    def _flock_weak(self, method, *args):
        """A hook calling self.method(*args) that does not keep this optimizer alive: the
        hooks of an optimizer you dropped do nothing (a new one may wrap the same model)."""
        ref = weakref.ref(self)

        def hook(*_):
            optimizer = ref()
            if optimizer is not None:
                return method(optimizer, *args)
            return None

        return hook

    @staticmethod
    def _flock_closure(closure):
        """Runs step()'s closure (forward and backward) before anything is communicated."""
        if closure is None:
            return None
        with torch.enable_grad():
            return closure()

    # --- waiting

    def _flock_wait_all(self):
        """{parameter: result} of every communication in flight; clears them."""
        handles, self._flock_handles = self._flock_handles, {}
        return {p: ops.synchronize(h) for p, h in handles.items() if h is not None}

    @contextlib.contextmanager
    def skip_synchronize(self):
        """``step()`` inside this block does not call ``synchronize()`` (you did already)."""
        self._flock_skip = True
        try:
            yield
        finally:
            self._flock_skip = False


def wrap(optimizer, mixin, *args, **kwargs):
    """Makes ``optimizer`` distributed with ``mixin`` and returns it."""
    if not isinstance(optimizer, torch.optim.Optimizer):
        raise TypeError("expected a torch.optim.Optimizer to wrap, got {!r}"
                        .format(type(optimizer).__name__))
    if isinstance(optimizer, DistributedOptimizerMixin):
        raise ValueError("this optimizer is already a flock distributed optimizer")
    base = type(optimizer)
    optimizer.__class__ = type(base.__name__, (mixin, base), {"__module__": base.__module__})
    optimizer._flock_setup(*args, **kwargs)
    return optimizer
