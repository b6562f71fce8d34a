"""Workflows of typed tasks: chains, groups (fan-out) and fan-ins, enqueued in one request
(DESIGN.md §21, §22).

::

    @task()
    def fetch(url: str) -> int: ...

    @task()
    def total(label: str) -> str:
        return f"{label}: {sum(fetch.results())}"   # the parents' results, as ints

    flow = group(fetch.step(url) for url in urls).then(total.step("bytes"))
    handle = flow.enqueue(client)                    # one request, all or nothing
    handle.result()                                  # total's result, a str

A step (``task.step(...)``) is a job with its arguments checked as ``enqueue`` checks them,
not enqueued yet. ``a.then(b)`` makes ``b`` wait for ``a``; ``group(steps)`` runs them side by
side, and ``.then(...)`` after a group waits for every one of them. A step's arguments are
fixed when the workflow is made: a step reads its parents' results in its handler, with
``parent_task.results()`` (or ``.result()`` for one parent). Inside a handler, ``await
flow.spawn()`` (``spawn_sync()`` in a plain ``def``) makes the workflow children of the
running job, under its lease's token and keyed, so a job leased again after a crash gets
the same children back.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Coroutine, Iterable
from typing import Any, Generic, TypeVar, overload

from leasehold.client import Client, Enqueued, NewJob, ParentRef, SyncClient
from leasehold.model import JSON, Job, OnFailure
from leasehold.tasks.handles import AsyncHandle, Handle, as_json
from leasehold.worker.context import current_job

R = TypeVar("R")
S = TypeVar("S")


class _Node:
    """One job of a workflow and the jobs of the same workflow it waits for. Nodes are
    told apart by identity: a step used in two branches is one job."""

    __slots__ = ("decode", "job", "parents")

    def __init__(
        self,
        job: NewJob,
        decode: Callable[[JSON], Any],
        parents: tuple[tuple[_Node, OnFailure], ...] = (),
    ) -> None:
        self.job = job
        self.decode = decode
        self.parents = parents


class _Graph:
    """Jobs in an order where parents come first, and the last ones (``tail``): those a
    step added with ``then`` waits for, and whose results the handles give."""

    __slots__ = ("_nodes", "_tail")

    _nodes: tuple[_Node, ...]
    _tail: tuple[_Node, ...]

    @classmethod
    def _made(cls, nodes: tuple[_Node, ...], tail: tuple[_Node, ...]) -> Any:
        graph = cls.__new__(cls)
        graph._nodes, graph._tail = nodes, tail
        return graph

    def __len__(self) -> int:
        return len(self._nodes)

    def __repr__(self) -> str:
        kinds = ", ".join(node.job.kind for node in self._nodes)
        return f"<{type(self).__name__} of {len(self)} jobs: {kinds}>"

    @overload
    def then(
        self, following: Workflow[S], /, *, on_failure: OnFailure | str = OnFailure.CANCEL
    ) -> Workflow[S]: ...

    @overload
    def then(
        self, following: Group[S], /, *, on_failure: OnFailure | str = OnFailure.CANCEL
    ) -> Group[S]: ...

    def then(
        self, following: Workflow[S] | Group[S], /, *, on_failure: OnFailure | str = "cancel"
    ) -> Workflow[S] | Group[S]:
        """``following``, run after this: its first jobs wait for this one's last. When one
        of these ends dead or cancelled the jobs waiting for it are cancelled, unless
        ``on_failure="run"`` (they run anyway: a clean-up step)."""
        nodes, tail = _joined(self, following, OnFailure(on_failure))
        made: Workflow[S] | Group[S] = type(following)._made(nodes, tail)
        return made

    def new_jobs(self) -> list[NewJob]:
        """The jobs, parents first, as ``client.enqueue_graph`` takes them: each named by
        its place (``ref`` "0", "1", ...)."""
        return self._named("")

    async def spawn(self, *, key: str | None = None) -> list[Enqueued]:
        """Make these jobs children of the running job (``current_job()``), in one request
        under its lease's token (``LeasedJob.spawn``), answered in order. Each is keyed
        ``"{key}.{place}"``; without ``key``, ``key`` is the number of spawn calls the
        run made before this one ("0" for the first). A job leased again after a crash
        that spawns again gets the children made the first time. In ``async def``
        handlers; ``spawn_sync`` in plain ones."""
        job = current_job()
        return await job.spawn(self._named(f"{job.spawns if key is None else key}."))

    def spawn_sync(self, *, key: str | None = None) -> list[Enqueued]:
        """``spawn`` for a plain (``def``) handler, which runs on a thread of its own."""
        job = current_job()
        return job.spawn_sync(self._named(f"{job.spawns if key is None else key}."))

    def _named(self, prefix: str) -> list[NewJob]:
        place = {id(node): n for n, node in enumerate(self._nodes)}
        return [
            dataclasses.replace(
                node.job,
                ref=f"{prefix}{n}",
                after=tuple(ParentRef(f"{prefix}{place[id(p)]}", mode) for p, mode in node.parents)
                or None,
            )
            for n, node in enumerate(self._nodes)
        ]

    def _tail_jobs(self, jobs: list[Job]) -> list[tuple[Job, Callable[[JSON], Any]]]:
        place = {id(node): n for n, node in enumerate(self._nodes)}
        return [(jobs[place[id(node)]], node.decode) for node in self._tail]

    def _send(self, client: SyncClient) -> list[tuple[Job, Callable[[JSON], Any]]]:
        jobs = [item.job for item in client.enqueue_graph(self.new_jobs())] if self else []
        return self._tail_jobs(jobs)

    async def _send_async(self, client: Client) -> list[tuple[Job, Callable[[JSON], Any]]]:
        jobs = [item.job for item in await client.enqueue_graph(self.new_jobs())] if self else []
        return self._tail_jobs(jobs)


class Workflow(_Graph, Generic[R]):
    """Jobs to enqueue together that end in one job, whose result is an ``R``: a step
    (``task.step(...)``), or steps and groups joined by ``then``. ``Workflow(new_job)`` is
    a step of a job that no typed task declares (its result is JSON)."""

    __slots__ = ()

    @overload
    def __init__(self: Workflow[JSON], job: NewJob, /) -> None: ...

    @overload
    def __init__(self, job: NewJob, /, decode: Callable[[JSON], R]) -> None: ...

    def __init__(self, job: NewJob, /, decode: Callable[[JSON], Any] = as_json) -> None:
        node = _Node(job, decode)
        self._nodes, self._tail = (node,), (node,)

    @overload
    def enqueue(self, client: SyncClient, /) -> Handle[R]: ...

    @overload
    def enqueue(self, client: Client, /) -> Coroutine[Any, Any, AsyncHandle[R]]: ...

    def enqueue(
        self, client: SyncClient | Client, /
    ) -> Handle[R] | Coroutine[Any, Any, AsyncHandle[R]]:
        """Enqueue every job in one request, all or none (at most 1,000), answering a
        handle on the last one: with a ``SyncClient`` now, with an async ``Client`` a
        coroutine."""
        if isinstance(client, SyncClient):
            ((job, decode),) = self._send(client)
            return Handle(client, job, decode)
        return self._enqueue(client)

    async def _enqueue(self, client: Client) -> AsyncHandle[R]:
        ((job, decode),) = await self._send_async(client)
        return AsyncHandle(client, job, decode)


class Group(_Graph, Generic[R]):
    """Jobs to enqueue together that end in several jobs run side by side, each with a
    result of type ``R`` (``group(steps)``); ``then`` after it waits for all of them."""

    __slots__ = ()

    @overload
    def enqueue(self, client: SyncClient, /) -> list[Handle[R]]: ...

    @overload
    def enqueue(self, client: Client, /) -> Coroutine[Any, Any, list[AsyncHandle[R]]]: ...

    def enqueue(
        self, client: SyncClient | Client, /
    ) -> list[Handle[R]] | Coroutine[Any, Any, list[AsyncHandle[R]]]:
        """Enqueue every job in one request, all or none (at most 1,000), answering a
        handle on each of the group's jobs, in order."""
        if isinstance(client, SyncClient):
            return [Handle(client, job, decode) for job, decode in self._send(client)]
        return self._enqueue(client)

    async def _enqueue(self, client: Client) -> list[AsyncHandle[R]]:
        sent = await self._send_async(client)
        return [AsyncHandle(client, job, decode) for job, decode in sent]


def group(steps: Iterable[Workflow[R] | Group[R]]) -> Group[R]:
    """Steps (or workflows) run side by side: a fan-out, and with ``.then(step)`` a
    fan-in, whose step waits for every one of them and reads their results. A group of
    none is allowed: the step after it runs at once, with no results to read."""
    nodes: dict[int, _Node] = {}
    tail: dict[int, _Node] = {}
    for item in steps:
        nodes |= {id(node): node for node in item._nodes}
        tail |= {id(node): node for node in item._tail}
    made: Group[R] = Group._made(tuple(nodes.values()), tuple(tail.values()))
    return made


def _joined(
    first: _Graph, following: _Graph, on_failure: OnFailure
) -> tuple[tuple[_Node, ...], tuple[_Node, ...]]:
    """The nodes of ``first`` then ``following``, whose first nodes (those with no parents)
    now wait for ``first``'s tail; the nodes built on them are made anew, so that neither
    graph changes. A node both have stays as ``first`` has it."""
    nodes = {id(node): node for node in first._nodes}
    made: dict[int, _Node] = {}
    for node in following._nodes:
        if id(node) in nodes:
            continue
        parents = tuple((made.get(id(p), p), mode) for p, mode in node.parents)
        if not node.parents:
            parents = tuple((last, on_failure) for last in first._tail)
        if parents != node.parents:
            made[id(node)] = _Node(node.job, node.decode, parents)
        nodes[id(node)] = made.get(id(node), node)
    tail = tuple(made.get(id(node), node) for node in following._tail)
    return tuple(nodes.values()), tail
