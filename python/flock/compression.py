"""Compression of what ops send: ``compression=flock.Compression.fp16`` (Horovod's name).

A compressed op sends a floating-point tensor in half precision (``fp16``: IEEE
float16, ``bf16``: bfloat16) and gives back the result in the tensor's own dtype:
half the bytes on the wire for float32, a quarter for float64. Arithmetic stays in
float32: reductions (allreduce's sum at every hop, a neighbor op's weighted sum on
arrival) convert the half-precision values to float32, add, and round once, never
accumulating in half precision. The error is that of rounding each input and each
partial sum that crosses the wire to half precision: a relative 2^-11 per rounding
for fp16 (2^-8 for bf16) of the magnitudes involved; docs/api.md#compression gives the
bounds the tests check.

Tensors that are not floating point, or already at most 16 bits wide, travel as they
are. fp16's range ends at 65504: values beyond overflow to inf (bf16 keeps float32's
range with less precision). Every rank of an op must pass the same compression: a rank
that does not sends another dtype, which the ops' mismatch check refuses on every rank.
"""

__all__ = ["Compression", "Compressor"]


class Compressor:
    """One way of sending tensors: ``wire`` is the dtype name they travel in (None: as is)."""

    def __init__(self, name, wire):
        self.name = name
        self.wire = wire

    def __repr__(self):
        return "Compression.{}".format(self.name)

    def __reduce__(self):  # pickles (broadcast_object, optimizer state) as the shared instance
        return (getattr, (Compression, self.name))


class Compression:
    """The compressions an op or optimizer accepts as ``compression=``."""

    none = Compressor("none", None)
    fp16 = Compressor("fp16", "float16")
    bf16 = Compressor("bf16", "bfloat16")


def resolve(compression):
    """The Compressor of a ``compression=`` argument (None, a Compressor, or its name)."""
    if compression is None:
        return Compression.none
    if isinstance(compression, Compressor):
        return compression
    if isinstance(compression, str) and isinstance(getattr(Compression, compression, None),
                                                   Compressor):
        return getattr(Compression, compression)
    raise TypeError("compression must be flock.Compression.none, .fp16 or .bf16 (or their "
                    "names), got {!r}".format(compression))
