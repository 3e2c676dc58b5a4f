"""ElasticSampler: each epoch's samples exactly once, whatever the world size does.

Each epoch has one permutation of the dataset (seeded by ``seed + epoch``, the same
on every rank). The sampler yields this rank's *batches* (use it as a DataLoader's
``batch_sampler``) from the part of the permutation not processed yet, and
``record_batch()`` after each step advances the shared position by the samples all
ranks took in that step. The position is what a commit saves (``state_dict``), so a
job resumed on another world size re-partitions only the rest of the epoch: no
sample of an epoch is repeated or skipped.

Partition of the rest (n samples, w ranks, batch size b): in each full round every
rank takes b consecutive samples. The remainder r = n mod (w·b) forms one more,
short round split as evenly as possible; if r < w (some rank would get nothing) the
r samples are spread over the previous round instead, one more to each of the first
r ranks. So every rank has the same number of batches (a collective per step never
waits for a rank that ran out), and they differ in size by at most one sample, except
when the whole rest is smaller than the world.
"""

from typing import Dict, Iterator, List

import torch

from flock import basics


class ElasticSampler(torch.utils.data.Sampler):
    """Batches of this rank for the current epoch's unprocessed samples."""

    def __init__(self, dataset, batch_size: int, shuffle: bool = True, seed: int = 0) -> None:
        if batch_size < 1:
            raise ValueError(f"ElasticSampler: batch_size must be at least 1, got {batch_size}")
        self.length = len(dataset)
        self.batch_size, self.shuffle, self.seed = batch_size, shuffle, seed
        self.epoch, self.processed = 0, 0
        self._rounds: List[List[List[int]]] = []
        self._next_round = 0
        self._plan()

    # --- position -----------------------------------------------------------
    def set_epoch(self, epoch: int) -> None:
        """Start epoch ``epoch`` from its first sample."""
        self.epoch, self.processed = epoch, 0
        self._plan()

    def record_batch(self) -> int:
        """One step is done: every rank's batch of it counts as processed. Returns how
        many samples that step took over all ranks."""
        if self._next_round >= len(self._rounds):
            raise RuntimeError("ElasticSampler.record_batch: no batch left in this epoch")
        taken = sum(len(batch) for batch in self._rounds[self._next_round])
        self.processed += taken
        self._next_round += 1
        return taken

    def state_dict(self) -> Dict[str, int]:
        return {"epoch": self.epoch, "processed": self.processed, "seed": self.seed}

    def load_state_dict(self, state: Dict[str, int]) -> None:
        self.epoch, self.processed = int(state["epoch"]), int(state["processed"])
        self.seed = int(state.get("seed", self.seed))
        self._plan()

    # --- batches --------------------------------------------------------------
    def _order(self) -> List[int]:
        if not self.shuffle:
            return list(range(self.length))
        generator = torch.Generator()
        generator.manual_seed(self.seed + self.epoch)
        return torch.randperm(self.length, generator=generator).tolist()

    def _plan(self) -> None:
        """Rounds of the rest of the epoch for the current world: [round][rank] -> indices."""
        world = basics.size() if basics.is_initialized() else 1
        self._rounds = partition(self._order()[self.processed:], world, self.batch_size)
        self._next_round = 0

    def __iter__(self) -> Iterator[List[int]]:
        self._plan()  # the world may have changed since the last plan
        rank = basics.rank() if basics.is_initialized() else 0
        for round_ in self._rounds:
            yield round_[rank]

    def __len__(self) -> int:
        return len(self._rounds)


def partition(rest: List[int], world: int, batch_size: int) -> List[List[List[int]]]:
    """The rounds of ``rest`` for ``world`` ranks (see the module docstring)."""
    per_round = world * batch_size
    full = len(rest) // per_round
    rounds = [[rest[i * per_round + r * batch_size:i * per_round + (r + 1) * batch_size]
               for r in range(world)] for i in range(full)]
    tail = rest[full * per_round:]
    if not tail:
        return rounds
    if len(tail) < world and rounds:
        for r, index in enumerate(tail):
            rounds[-1][r].append(index)
        return rounds
    share, extra = divmod(len(tail), world)
    cuts = [r * share + min(r, extra) for r in range(world + 1)]
    rounds.append([tail[cuts[r]:cuts[r + 1]] for r in range(world)])
    return rounds
