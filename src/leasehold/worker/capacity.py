"""The worker's free handler slots, taken a batch at a time by its lease requests."""

from __future__ import annotations

import asyncio


class Capacity:
    """``total`` slots. The lease loop takes every free slot for its next request (so a
    lease batch is never larger than what can start at once) and gives back those the
    answer did not fill; each job gives its own back when its handler ends."""

    def __init__(self, total: int) -> None:
        self.total = total
        self._free = total
        self._freed = asyncio.Event()
        self._freed.set()

    @property
    def free(self) -> int:
        return self._free

    async def take_all(self, stopping: asyncio.Event) -> int:
        """Wait for a free slot and take every free one; 0 once ``stopping`` is set."""
        while self._free == 0 and not stopping.is_set():
            self._freed.clear()
            freed = asyncio.ensure_future(self._freed.wait())
            stopped = asyncio.ensure_future(stopping.wait())
            try:
                await asyncio.wait({freed, stopped}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                freed.cancel()
                stopped.cancel()
        if stopping.is_set():
            return 0
        taken, self._free = self._free, 0
        return taken

    def give(self, n: int = 1) -> None:
        if n <= 0:
            return
        self._free += n
        assert self._free <= self.total, "a slot was given back twice"
        self._freed.set()
