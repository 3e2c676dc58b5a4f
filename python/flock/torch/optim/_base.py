"""What every distributed optimizer shares.

Wrapping: the user's optimizer object gets a class of its own that derives from
both the distributed behaviour (a mixin below) and the optimizer's class, so it
stays that optimizer — its update rule, hyperparameters, state, ``state_dict``,
``param_groups``, learning-rate schedulers and ``isinstance`` checks all work as
before — and only ``step`` (and ``synchronize``) learn to communicate.

Names: each parameter communicates under a name taken from
``model.named_parameters()`` (the same on every rank), so ranks may launch their
parameters in any order. Parameters the model does not name get
``group<g>.param<i>``. The n-th optimizer of a kind wrapped in this process
adds ``<n>`` to its prefix, so two optimizers (a GAN's) never share a name —
wrap them in the same order on every rank.

Hooks: communication is launched from autograd hooks on each parameter's
gradient accumulator (the node that adds a backward pass's gradient into
``p.grad``; its hook runs once that is done), or from forward pre-hooks on the
modules that own parameters, so it overlaps the rest of the pass. A parameter
belongs to the optimizer that wrapped it last: hooks of an earlier one (or of a
dropped one) do nothing.
"""

import contextlib
import itertools
import numbers
import weakref

import torch

from flock.compression import resolve as resolve_compression
from flock.torch import ops

# id(parameter) -> (weakref to it, weakref to the optimizer it belongs to). Tensors compare
# elementwise, so they cannot be keys of a WeakKeyDictionary; nothing is stored on the
# parameter either, so models still pickle.
_owners = {}


def _set_owner(p, optimizer):
    key = id(p)
    _owners[key] = (weakref.ref(p, lambda _ref: _owners.pop(key, None)), weakref.ref(optimizer))


def _owner_of(p):
    entry = _owners.get(id(p))
    if entry is None or entry[0]() is not p:
        return None
    return entry[1]()
_wrap_counters = {}  # kind -> itertools.count: the n-th optimizer of that kind


class DistributedOptimizerMixin:
    """Bookkeeping shared by the gradient-allreduce and combine optimizers."""

    _flock_kind = "distributed"  # prefix of the communication names

    def _flock_setup(self, model, num_steps_per_communication, compression=None):
        self.compression = resolve_compression(compression)
        if isinstance(num_steps_per_communication, bool) or not isinstance(
                num_steps_per_communication, numbers.Integral) or num_steps_per_communication < 1:
            raise ValueError("num_steps_per_communication must be an integer >= 1, got {!r}"
                             .format(num_steps_per_communication))
        self.num_steps_per_communication = int(num_steps_per_communication)
        n = next(_wrap_counters.setdefault(self._flock_kind, itertools.count()))
        self._flock_prefix = self._flock_kind + (str(n) if n else "")
        self._flock_model = model
        self._flock_handles = {}  # parameter -> handle of its communication in flight
        self._flock_skip = False
        self._flock_synchronized = False  # synchronize() ran since the last step()
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
        return "{}.{}.{}".format(self._flock_prefix, what, self._flock_names.get(p, id(p)))

    def _flock_owns(self, p):
        return _owner_of(p) is self

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
            _set_owner(p, self)
            if p in self._flock_hooked:
                continue
            self._flock_hooked.add(p)
            self._flock_register(p)

    def _flock_register(self, p):
        """Registers what launches p's communication (subclasses)."""

    def _flock_on_gradient(self, p, method):
        """Calls self.method(p) each time a backward pass has added its gradient into p.grad."""
        with torch.enable_grad():  # a wrap inside no_grad() still finds the accumulator
            accumulator = p.expand_as(p).grad_fn.next_functions[0][0]
        accumulator.register_hook(self._flock_weak(method, p))
        self._flock_hook_refs.append(accumulator)

    def _flock_hook_forward(self, model, count, launch, params):
        """Forward pre-hooks: `count` on the model (first, so a pass is counted before any
        module launches), then `launch` on each module owning some of `params`."""
        if model is None:
            return
        self._flock_hook_module(model, count, sorted(params, key=id))
        for module in model.modules():
            own = [p for p in module.parameters(recurse=False) if p in params]
            if own:
                self._flock_hook_module(module, launch, own)

    def _flock_hook_module(self, module, method, params):
        handle = module.register_forward_pre_hook(self._flock_weak(method, params))
        weakref.finalize(self, handle.remove)

    def _flock_weak(self, method, target):
        """A hook calling method(self, target) while self owns target's parameters."""
        return _WeakHook(self, method, target)

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
        return self._flock_wait(handles)

    @staticmethod
    def _flock_wait(handles):
        """{parameter: result} of {parameter: handle}. Waits for all of them even when
        one fails, then raises the first error."""
        results, error = {}, None
        for p, handle in handles.items():
            if handle is None:
                continue
            try:
                results[p] = ops.synchronize(handle)
            except BaseException as exc:  # noqa: B902 (Ctrl-C included: the rest still finish)
                error = error or exc
        if error is not None:
            raise error
        return results

    @staticmethod
    def _flock_write(results):
        """Writes {parameter: value} into the parameters (their storage stays)."""
        with torch.no_grad():
            for p, value in results.items():
                p.copy_(value)

    @contextlib.contextmanager
    def skip_synchronize(self):
        """``step()`` inside this block does not call ``synchronize()`` (you did already)."""
        self._flock_skip = True
        try:
            yield
        finally:
            self._flock_skip = False


class _WeakHook:
    """A hook that calls method(optimizer, target) while the optimizer owns target (a
    parameter or a list of them). It does not keep the optimizer alive and goes quiet once
    another optimizer wraps the parameters. A model pickled whole (torch.save(model))
    keeps an inert hook in its place."""

    def __init__(self, optimizer, method, target):
        self._optimizer = weakref.ref(optimizer)
        self._method = method
        self._target = target

    def __call__(self, *_):
        optimizer = self._optimizer()
        if optimizer is None:
            return None
        params = self._target if isinstance(self._target, list) else [self._target]
        if not all(optimizer._flock_owns(p) for p in params):
            return None
        return self._method(optimizer, self._target)

    def __reduce__(self):
        return (_inert_hook_factory, ())


def _inert_hook(*_):
    return None


def _inert_hook_factory():
    return _inert_hook


def wrap(optimizer, mixin, *args, **kwargs):
    """Makes ``optimizer`` distributed with ``mixin`` and returns it."""
    if not isinstance(optimizer, torch.optim.Optimizer):
        raise TypeError("expected a torch.optim.Optimizer to wrap, got {!r}"
                        .format(type(optimizer).__name__))
    if isinstance(optimizer, DistributedOptimizerMixin):
        raise ValueError("this optimizer is already a flock distributed optimizer")
    base = type(optimizer)
    optimizer.__class__ = type(base.__name__, (mixin, base), {"__module__": base.__module__})
    if "step" in optimizer.__dict__:
        # A learning-rate scheduler made before wrapping replaced `step` on the object with a
        # counting wrapper around the original class's step; count through ours instead.
        del optimizer.__dict__["step"]
        optimizer.step = _counting_step(optimizer)
    optimizer._flock_setup(*args, **kwargs)
    return optimizer


def _counting_step(optimizer):
    ref = weakref.ref(optimizer)

    def step(*args, **kwargs):
        instance = ref()
        instance._step_count = getattr(instance, "_step_count", 0) + 1
        return type(instance).step(instance, *args, **kwargs)

    step._with_counter = True  # what torch's schedulers look for
    return step
