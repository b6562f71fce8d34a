"""The demo's jobs: mostly quick ones, some flaky, a few that fail for good, a few slow."""

from __future__ import annotations

import random
from dataclasses import dataclass

from leasehold.client import NewJob

# Few attempts, so that the emails that never go through are dead within the run.
EMAIL_MAX_ATTEMPTS = 3


@dataclass(frozen=True, slots=True)
class Expected:
    """What the run should come to, known from the payloads."""

    dead: int
    retries: int


def demo_jobs(count: int, seed: int = 42) -> tuple[list[NewJob], Expected]:
    """``count`` jobs in a fixed mix (the same for the same count and seed):

    - 80% resize-image, quick (0-5 ms);
    - 12% send-email: half go at once, the rest fail once or twice first, and one in twenty
      never goes through (dead after 3 attempts);
    - 6% charge-card, one in ten declined (dead at once, no retry);
    - 2% build-report, slow (0.2-0.6 s).
    """
    rng = random.Random(seed)
    jobs: list[NewJob] = []
    dead = retries = 0
    for n in range(count):
        roll = rng.random()
        if roll < 0.80:
            jobs.append(NewJob("resize-image", {"image": f"img-{n}", "ms": rng.randint(0, 5)}))
        elif roll < 0.92:
            fail_times = rng.choices([0, 1, 2, 99], weights=[50, 30, 15, 5])[0]
            dead += fail_times >= EMAIL_MAX_ATTEMPTS
            retries += min(fail_times, EMAIL_MAX_ATTEMPTS - 1)
            payload = {"to": f"user{n}@example.com", "fail_times": fail_times}
            jobs.append(NewJob("send-email", payload, max_attempts=EMAIL_MAX_ATTEMPTS))
        elif roll < 0.98:
            card = "declined" if rng.random() < 0.1 else "4242"
            dead += card == "declined"
            jobs.append(NewJob("charge-card", {"card": card, "cents": rng.randint(100, 9999)}))
        else:
            seconds = round(rng.uniform(0.2, 0.6), 2)
            jobs.append(NewJob("build-report", {"seconds": seconds, "pages": rng.randint(1, 40)}))
    return jobs, Expected(dead=dead, retries=retries)
