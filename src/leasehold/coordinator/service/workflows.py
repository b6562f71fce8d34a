"""A batch (or a spawn) whose items depend on each other, made ready for the store
(DESIGN.md §22): refs resolved to places, items put parents first, errors named by the
item the request gave."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from leasehold.coordinator.rules.graph import insertion_order
from leasehold.coordinator.service.requests import Enqueue
from leasehold.coordinator.store.contract import Inserted, NewJob
from leasehold.errors import InvalidGraph
from leasehold.model import MAX_PARENTS


class Graph:
    """The jobs of one request as the store takes them (``jobs``, parents first), and
    the way back to the request's order (``answers``)."""

    def __init__(self, requests: Sequence[Enqueue], *, spawned_by: int | None = None) -> None:
        places = _refs(requests)
        after = [
            [_place(places, ref, n) for ref, _ in request.after]
            for n, request in enumerate(requests)
        ]
        self.order = insertion_order(after) if any(after) else list(range(len(requests)))
        position = {item: at for at, item in enumerate(self.order)}
        self.jobs: list[NewJob] = []
        for item in self.order:
            request = requests[item]
            parents = len(request.depends_on or ()) + len(request.after)
            if parents > MAX_PARENTS:
                raise InvalidGraph(
                    f"jobs[{item}] depends on {parents} jobs; at most {MAX_PARENTS} are allowed",
                    loc=("jobs", item, "depends_on"),
                )
            new = request.new_job()
            self.jobs.append(
                dataclasses.replace(
                    new,
                    after=tuple(
                        (position[place], mode)
                        for place, (_, mode) in zip(after[item], request.after, strict=True)
                    ),
                    spawned_by=spawned_by,
                    loc=("jobs", item) if len(requests) > 1 or spawned_by else (),
                )
            )

    def answers(self, inserted: Sequence[Inserted]) -> list[Inserted]:
        """The store's answers, in the order the request gave the items."""
        answers: list[Inserted | None] = [None] * len(self.order)
        for item, answer in zip(self.order, inserted, strict=True):
            answers[item] = answer
        return [a for a in answers if a is not None]


def _refs(requests: Sequence[Enqueue]) -> dict[str, int]:
    places: dict[str, int] = {}
    for n, request in enumerate(requests):
        ref = request.ref if request.ref is not None else request.spawn_key
        if ref is None:
            continue
        if ref in places:
            raise InvalidGraph(
                f"jobs[{n}] has the same ref as jobs[{places[ref]}]; refs name one item each",
                loc=("jobs", n, "ref" if request.ref is not None else "key"),
            )
        places[ref] = n
    return places


def _place(places: dict[str, int], ref: str, item: int) -> int:
    place = places.get(ref)
    if place is None:
        raise InvalidGraph(
            f"jobs[{item}] depends on a ref no item of this request has",
            loc=("jobs", item, "depends_on"),
        )
    if place == item:
        raise InvalidGraph(f"jobs[{item}] depends on itself", loc=("jobs", item, "depends_on"))
    return place
