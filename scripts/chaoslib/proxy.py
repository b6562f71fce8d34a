"""A TCP proxy between workers and the coordinator that delays and cuts connections."""

from __future__ import annotations

import asyncio
import contextlib
import random
from dataclasses import dataclass, field


@dataclass
class Faults:
    delay_probability: float = 0.0  # chance that a chunk is held back
    max_delay_seconds: float = 0.0
    down: bool = False  # refuse (close at once) every new connection


@dataclass
class ProxyStats:
    connections: int = 0
    cut: int = 0
    refused: int = 0
    delayed_chunks: int = 0
    pipes: set[asyncio.Task[None]] = field(default_factory=set)


class FaultyProxy:
    """Listens on 127.0.0.1:``port`` and forwards to the coordinator's current port."""

    def __init__(self, target_port: int, rng: random.Random) -> None:
        self.target_port = target_port
        self.rng = rng
        self.faults = Faults()
        self.stats = ProxyStats()
        self._server: asyncio.Server | None = None
        self._links: set[tuple[asyncio.StreamWriter, asyncio.StreamWriter]] = set()

    @property
    def port(self) -> int:
        assert self._server is not None
        port: int = self._server.sockets[0].getsockname()[1]
        return port

    async def start(self) -> FaultyProxy:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        return self

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
        self.cut_all()

    def cut_all(self) -> int:
        """Close every open connection in both directions, as a network failure would."""
        links = list(self._links)
        for a, b in links:
            for writer in (a, b):
                with contextlib.suppress(Exception):
                    writer.transport.abort()
        self.stats.cut += len(links)
        self._links.clear()
        return len(links)

    def cut_some(self, fraction: float) -> int:
        links = [link for link in list(self._links) if self.rng.random() < fraction]
        for a, b in links:
            for writer in (a, b):
                with contextlib.suppress(Exception):
                    writer.transport.abort()
            self._links.discard((a, b))
        self.stats.cut += len(links)
        return len(links)

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.faults.down:
            self.stats.refused += 1
            writer.transport.abort()
            return
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target_port)
        except OSError:
            self.stats.refused += 1
            writer.transport.abort()
            return
        self.stats.connections += 1
        link = (writer, up_writer)
        self._links.add(link)
        try:
            await asyncio.gather(self._pipe(reader, up_writer), self._pipe(up_reader, writer))
        finally:
            self._links.discard(link)
            for w in link:
                with contextlib.suppress(Exception):
                    w.close()

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while chunk := await reader.read(65536):
                if (
                    self.faults.max_delay_seconds
                    and self.rng.random() < self.faults.delay_probability
                ):
                    self.stats.delayed_chunks += 1
                    await asyncio.sleep(self.rng.uniform(0, self.faults.max_delay_seconds))
                writer.write(chunk)
                await writer.drain()
        except (ConnectionError, OSError, asyncio.IncompleteReadError):
            pass
        finally:
            with contextlib.suppress(Exception):
                writer.write_eof()
