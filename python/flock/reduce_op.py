"""Reduction operators and how ``average``/``op`` arguments select one."""

from flock._core_loader import core
from flock.errors import FlockInvalidArgumentError

ReduceOp = core.ReduceOp
Sum = ReduceOp.SUM
Average = ReduceOp.AVERAGE
Min = ReduceOp.MIN
Max = ReduceOp.MAX
Product = ReduceOp.PRODUCT

_BY_NAME = {"sum": Sum, "average": Average, "avg": Average, "mean": Average, "min": Min,
            "max": Max, "product": Product, "prod": Product}


def resolve_reduce_op(average, op):
    """The ReduceOp for Bluefog's ``average`` flag and flock's ``op`` argument.

    ``op`` wins when given; ``average`` (default True) picks average or sum.
    Giving both in contradiction is an error rather than a silent choice.
    """
    if op is None:
        return Average if average in (None, True) else Sum
    if isinstance(op, str):
        if op.lower() not in _BY_NAME:
            raise FlockInvalidArgumentError(
                "unknown reduction op {!r}; use one of sum, average, min, max, product".format(op))
        op = _BY_NAME[op.lower()]
    if not isinstance(op, ReduceOp):
        raise FlockInvalidArgumentError("op must be a flock.ReduceOp or its name, got {!r}".format(op))
    if average is not None and (op == Average) != bool(average):
        raise FlockInvalidArgumentError(
            "average={} contradicts op={}; pass only one of them".format(average, op.name.lower()))
    return op
