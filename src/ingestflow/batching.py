"""Group a stream into batches bounded by a count and a total size."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TypeVar

T = TypeVar("T")


def bounded_batches(
    sized: Iterable[tuple[T, int]], max_count: int, max_size: int
) -> Iterator[list[T]]:
    """Batches of at most `max_count` items whose sizes add up to at most `max_size`; an item
    larger than `max_size` forms a batch of its own."""
    batch: list[T] = []
    total = 0
    for item, size in sized:
        if batch and (len(batch) >= max_count or total + size > max_size):
            yield batch
            batch, total = [], 0
        batch.append(item)
        total += size
    if batch:
        yield batch
