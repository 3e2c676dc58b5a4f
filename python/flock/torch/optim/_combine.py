"""The decentralized optimizers: each rank combines its parameters with others'.

With W the mixing weights of the chosen communication, lr the step size and
g_i the gradient rank i computed at its parameters x_i:

  adapt-with-combine (AWC)   x_i ← Σ_j W_ji x_j − lr·g_i(x_i)
      The parameters are sent at the start of the forward pass (forward
      pre-hooks of the modules that own them), so the exchange overlaps the
      whole forward and backward pass; step() writes the combination, then
      runs the wrapped optimizer's update with g_i.
  adapt-then-combine (ATC)   x_i ← Σ_j W_ji (x_j − lr·g_j(x_j))
      As soon as a parameter's gradient is complete (backward hook), the
      wrapped optimizer updates that parameter alone — its own rule: SGD,
      momentum, Adam, AdamW, ... — and the updated value is sent, overlapping
      the rest of the backward pass; step() writes the combination.

Communication types: neighbor_allreduce (the static topology, or the
self_weight / src_weights / dst_weights knobs), hierarchical_neighbor_allreduce
(the machine topology, or self_weight / src_machine_weights /
dst_machine_weights), allreduce (the global average) and empty (none).
The knobs are read when a parameter's communication is launched: set them
before the forward pass (AWC) or backward pass (ATC) of the step they are for.

Passes and J = num_steps_per_communication (as Bluefog counts them): AWC
counts the model's forward passes (training mode, gradients enabled), ATC the
backward passes that reach a parameter. The J-th pass since the last exchange
launches the exchange (ATC: after the update of the accumulated p.grad), and
the step() that follows is the exchanging step; step() calls before it are
local steps. So J passes may be followed by one step() (gradient accumulation)
or each by its own step() (local SGD). A step() that no counted pass preceded
(no model given, or a model used in parts) counts as a pass itself.
Parameters are updated in place: their storage never changes.
"""

import enum
import weakref

import torch

from flock.torch import ops
from flock.torch.optim._base import DistributedOptimizerMixin
from flock.torch.optim._deferred import DeferredCombineMixin
from flock._public import public


class CommunicationType(enum.Enum):
    neighbor_allreduce = "neighbor.allreduce"
    hierarchical_neighbor_allreduce = "hierarchical.neighbor.allreduce"
    allreduce = "allreduce"
    empty = "empty"


def communication_type_of(value):
    """A CommunicationType from itself, its value or its name."""
    if isinstance(value, CommunicationType):
        return value
    for member in CommunicationType:
        if value in (member.value, member.name):
            return member
    raise ValueError("communication_type must be one of {}, got {!r}".format(
        ", ".join(m.name for m in CommunicationType), value))


class CombineMixin(DistributedOptimizerMixin):
    """The knobs, the pass count and the combine step shared by AWC and ATC."""

    def _flock_setup(self, model, communication_type, num_steps_per_communication,
                     compression=None):
        self.communication_type = communication_type
        self.self_weight = None
        self.src_weights = None
        self.dst_weights = None
        self.src_machine_weights = None
        self.dst_machine_weights = None
        self.enable_topo_check = True
        self._flock_passes = 0  # passes counted since the last exchanging step
        self._flock_pass_seen = False  # whether one was counted since the last step()
        super()._flock_setup(model, num_steps_per_communication, compression)

    @property
    def communication_type(self):
        return self._flock_communication_type

    @communication_type.setter
    def communication_type(self, value):
        self._flock_communication_type = communication_type_of(value)

    # --- the pass count

    def _flock_note_pass(self, passes=None):
        """Counts a pass (or raises the count to `passes`, ATC's per-parameter count)."""
        self._flock_passes = self._flock_passes + 1 if passes is None else max(
            self._flock_passes, passes)
        self._flock_pass_seen = True

    def _flock_close_passes(self):
        """A step() that no counted pass preceded counts as one (idempotent per step)."""
        if not self._flock_pass_seen:
            self._flock_note_pass()

    def _flock_exchange_due(self):
        return self._flock_passes >= self.num_steps_per_communication

    def _flock_communicating(self):
        """Whether the passes counted so far make this step an exchanging one."""
        return (self.communication_type is not CommunicationType.empty and
                self._flock_exchange_due())

    def _flock_exchanging(self):
        """Whether this step combines: it is due, or hooks already launched for it."""
        return self._flock_communicating() or bool(self._flock_handles)

    # --- communication

    def _flock_launch(self, p):
        tensor, name = p.detach(), self._flock_name(p, "param")
        kind = self.communication_type
        if kind is CommunicationType.neighbor_allreduce:
            handle = ops.neighbor_allreduce_nonblocking(
                tensor, self_weight=self.self_weight, src_weights=self.src_weights,
                dst_weights=self.dst_weights, enable_topo_check=self.enable_topo_check, name=name,
                compression=self.compression)
        elif kind is CommunicationType.hierarchical_neighbor_allreduce:
            handle = ops.hierarchical_neighbor_allreduce_nonblocking(
                tensor, self_weight=self.self_weight, src_machine_weights=self.src_machine_weights,
                dst_machine_weights=self.dst_machine_weights,
                enable_topo_check=self.enable_topo_check, name=name, compression=self.compression)
        elif kind is CommunicationType.allreduce:
            handle = ops.allreduce_nonblocking(tensor, average=True, name=name,
                                               compression=self.compression)
        else:
            handle = None
        self._flock_handles[p] = handle

    def _flock_before_launch(self, p):
        """What a parameter launched at synchronize() (not from a hook) needs first."""

    @public
    def synchronize(self):
        """Waits for this step's combination and writes it into the parameters (on an
        exchanging step; once per step: step() does not do it again)."""
        if self._flock_synchronized:
            return
        self._flock_close_passes()
        exchanging = self._flock_exchanging()
        if exchanging:
            self._flock_launch_missing()
        # Whatever is in flight is waited for, even if communication_type changed since.
        self._flock_write(self._flock_wait_all())
        self._flock_synchronized = exchanging

    def _flock_launch_missing(self):
        """Launches the parameters no hook launched (unused this pass)."""
        for p in self._flock_params():
            if p not in self._flock_handles:
                self._flock_before_launch(p)
                self._flock_launch(p)

    def _flock_end_step(self):
        if self._flock_exchange_due():
            self._flock_passes = 0  # the next J passes lead to the next exchange
        self._flock_pass_seen = False
        self._flock_synchronized = False


class AdaptWithCombineMixin(CombineMixin):
    _flock_kind = "awc"

    def _flock_setup(self, model, communication_type, num_steps_per_communication,
                     compression=None):
        super()._flock_setup(model, communication_type, num_steps_per_communication, compression)
        self._flock_hook_forward(model, AdaptWithCombineMixin._flock_count_forward,
                                 AdaptWithCombineMixin._flock_forward, self._flock_hooked)

    def _flock_count_forward(self, _params):
        # Only training passes that will be backpropagated (not evaluation), as Bluefog.
        if torch.is_grad_enabled() and self._flock_model.training:
            self._flock_note_pass()

    def _flock_forward(self, params):
        if not torch.is_grad_enabled() or not self._flock_communicating():
            return
        for p in params:
            if p not in self._flock_handles:
                self._flock_launch(p)

    @public
    def step(self, closure=None):
        loss = self._flock_closure(closure)
        self._flock_close_passes()
        if not self._flock_skip:
            self.synchronize()
        super().step()
        self._flock_end_step()
        return loss


class AdaptThenCombineMixin(DeferredCombineMixin, CombineMixin):
    _flock_kind = "atc"

    def _flock_setup(self, model, communication_type, num_steps_per_communication,
                     overlap_next_forward=True, compression=None):
        self._flock_group_of = None
        self._flock_param_passes = {}  # parameter -> backward passes since the last exchange
        self._flock_adapted = set()  # parameters the wrapped optimizer updated this step
        super()._flock_setup(model, communication_type, num_steps_per_communication, compression)
        self._flock_setup_deferral(model, overlap_next_forward)

    def _flock_register(self, p):
        self._flock_on_gradient(p, AdaptThenCombineMixin._flock_gradient_ready)

    def _flock_gradient_ready(self, p):
        """p.grad holds this backward pass's gradient (added to the earlier ones')."""
        self._flock_check_not_deferred(p)
        if p in self._flock_adapted:
            raise RuntimeError(
                "parameter {!r} got a backward pass after the adapt-then-combine optimizer "
                "had updated and sent it (num_steps_per_communication={} passes reached it): "
                "call step() before the next backward pass".format(
                    self._flock_names.get(p), self.num_steps_per_communication))
        passes = self._flock_param_passes.get(p, 0) + 1
        self._flock_param_passes[p] = passes
        self._flock_note_pass(passes)
        if passes >= self.num_steps_per_communication and self._flock_communicating():
            self._flock_adapt(p)
            self._flock_launch(p)

    def _flock_adapt(self, p):
        """The wrapped optimizer's update of p alone, with p's group's hyperparameters."""
        self._flock_adapted.add(p)
        if p.grad is None:
            return
        if self._flock_group_of is None:
            self._flock_group_of = {q: g for g in self.param_groups for q in g["params"]}
        groups = self.param_groups
        self.param_groups = [dict(self._flock_group_of[p], params=[p])]
        try:
            super().step()
        finally:
            self.param_groups = groups

    _flock_before_launch = _flock_adapt

    def _flock_exchanging(self):
        return super()._flock_exchanging() or bool(self._flock_adapted)

    @public
    def synchronize(self):
        """Waits for this step's combination and writes it into the parameters. Called
        after step() (no backward pass since), it only writes what step() left in flight
        (overlap_next_forward): it never starts a step of its own."""
        self._flock_flush_deferred()
        if self._flock_pass_seen:
            super().synchronize()

    @public
    def step(self, closure=None):
        loss = self._flock_closure(closure)
        self._flock_flush_deferred()  # the last step's, for parameters no forward pass reached
        self._flock_close_passes()
        exchanging = self._flock_synchronized or self._flock_exchanging()
        if not self._flock_skip:
            if exchanging and self._flock_defers():
                self._flock_launch_missing()
                self._flock_defer_handles()  # waited for in the next forward pass
            else:
                self.synchronize()
        if not exchanging:
            super().step()  # a local step (the hooks updated nothing)
        self._flock_group_of = None  # param_groups may change before the next step
        self._flock_end_step()
        return loss

    def _flock_end_step(self):
        if self._flock_exchange_due():
            self._flock_param_passes.clear()
        self._flock_adapted.clear()
        super()._flock_end_step()
