"""A TCP proxy between the workers under test and the coordinator that loses answers.

While ``drop`` is above 0, each answer the coordinator sends back is lost with that
chance: the proxy cuts both sides of the connection instead of passing it on. The request
itself got through and was committed, so the worker sees the case PROTOCOL.md §8 is about:
no answer, after the change. (A smaller cousin of the chaos run's proxy, scripts/chaoslib.)

While held (``hold``, until ``let_go``), answers wait in the proxy: a lease made now
reaches its worker only when it is let go, after the worker was told to stop.
"""

from __future__ import annotations

import asyncio
import contextlib
import random


class LossyProxy:
    def __init__(self, target_port: int, rng: random.Random | None = None) -> None:
        self.target_port = target_port
        self.rng = rng or random.Random()
        self.drop = 0.0
        self.lost = 0
        self._flowing = asyncio.Event()
        self._flowing.set()
        self._server: asyncio.Server | None = None

    def hold(self) -> None:
        """Keep every answer from now on in the proxy, until ``let_go``."""
        self._flowing.clear()

    def let_go(self) -> None:
        self._flowing.set()

    @property
    def port(self) -> int:
        assert self._server is not None
        port: int = self._server.sockets[0].getsockname()[1]
        return port

    async def start(self) -> LossyProxy:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        return self

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target_port)
        except OSError:
            writer.transport.abort()
            return
        try:
            await asyncio.gather(
                self._pipe(reader, up_writer, None),
                self._pipe(up_reader, writer, up_writer),
            )
        finally:
            for w in (writer, up_writer):
                with contextlib.suppress(Exception):
                    w.close()

    async def _pipe(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        upstream: asyncio.StreamWriter | None,
    ) -> None:
        """``upstream`` is set on the answers' direction: those may be lost."""
        try:
            while chunk := await reader.read(65536):
                if upstream is not None:
                    await self._flowing.wait()
                if upstream is not None and self.drop and self.rng.random() < self.drop:
                    self.lost += 1
                    writer.transport.abort()
                    upstream.transport.abort()
                    return
                writer.write(chunk)
                await writer.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            with contextlib.suppress(Exception):
                writer.write_eof()
