"""A state as a small pickled skeleton plus raw blocks of bytes, and back.

Pickling a model's state copies every tensor into the pickle, and unpickling it
allocates every tensor again: for ResNet-50 with momentum that is 205 MB touched
twice more, which is most of a restore on a machine where fresh memory costs
~0.3 GB/s. Here large arrays leave the pickle: ``pack`` asks ``block_of(obj)`` for
each object it pickles, and an object that is a block is written as a reference
(its index and a description, ``meta``) while its bytes stay where they are.
``unpack`` reads the skeleton back and asks ``new_block(meta)`` for an object to
put where each reference was and for the writable bytes it will be filled
through: the commit file, or a broadcast, fills those bytes in place.
"""

import io
import pickle
from typing import Any, Callable, List, Optional, Tuple

import numpy as np

_TAG = "flock-block"

# block_of(obj) -> (meta, buffer) for an object stored as a block, or None.
BlockOf = Callable[[Any], Optional[Tuple[Any, Any]]]
# new_block(meta) -> (the object to place, a writable uint8 array to fill it through).
NewBlock = Callable[[Any], Tuple[Any, np.ndarray]]


def as_bytes(buffer) -> np.ndarray:
    """A bytes-like object as a flat uint8 array over the same memory."""
    return np.frombuffer(buffer, dtype=np.uint8) if not isinstance(buffer, np.ndarray) \
        else buffer.reshape(-1).view(np.uint8)


class _Packer(pickle.Pickler):
    def __init__(self, file, block_of: BlockOf) -> None:
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self._block_of, self.blocks = block_of, []

    def persistent_id(self, obj):
        found = self._block_of(obj)
        if found is None:
            return None
        meta, buffer = found
        self.blocks.append(as_bytes(buffer))
        return (_TAG, len(self.blocks) - 1, meta)


class _Unpacker(pickle.Unpickler):
    def __init__(self, file, new_block: NewBlock) -> None:
        super().__init__(file)
        self._new_block = new_block
        self.placed: List[Any] = []
        self.buffers: List[np.ndarray] = []

    def persistent_load(self, pid):
        if not (isinstance(pid, tuple) and len(pid) == 3 and pid[0] == _TAG
                and pid[1] == len(self.buffers)):
            raise pickle.UnpicklingError(f"unexpected reference {pid!r} in a flock state")
        placed, buffer = self._new_block(pid[2])
        self.placed.append(placed)
        self.buffers.append(buffer)
        return placed


def pack(obj, block_of: BlockOf) -> Tuple[bytes, List[np.ndarray]]:
    """(skeleton, blocks): the blocks are views of the objects' own memory."""
    file = io.BytesIO()
    packer = _Packer(file, block_of)
    packer.dump(obj)
    return file.getvalue(), packer.blocks


def unpack(skeleton, new_block: NewBlock) -> Tuple[Any, List[Any], List[np.ndarray]]:
    """(obj, the object placed for each block, the buffer to fill each through)."""
    unpacker = _Unpacker(io.BytesIO(skeleton), new_block)
    obj = unpacker.load()
    return obj, unpacker.placed, unpacker.buffers


def no_blocks(obj) -> None:
    """block_of for a state kept wholly in the pickle."""
    return None


def refuse_blocks(meta):
    """new_block for a state that never has blocks."""
    raise pickle.UnpicklingError(f"a plain State's commit holds a block ({meta!r}): was it "
                                 f"written by a TorchState?")
