from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from examples.django_app.producer import client
from examples.django_app.tasks import send_welcome
from leasehold import IdempotencyConflict, JobFailed, ResultTimeout


class Command(BaseCommand):
    help = "Enqueue a welcome mail and wait for the worker to send it."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("email")
        parser.add_argument("--wait", type=float, default=10.0, help="seconds to wait")

    def handle(self, *args: Any, **options: Any) -> None:
        # CommandError: one line on stderr and exit 1, as Django's own commands fail.
        try:
            handle = send_welcome.enqueue(client(), options["email"])
        except IdempotencyConflict as exc:  # the key names another job
            raise CommandError(f"not enqueued: {exc.message}") from None
        try:
            result = handle.result(timeout=options["wait"])
        except (JobFailed, ResultTimeout) as exc:
            raise CommandError(f"job {handle.id}: {exc}") from None
        self.stdout.write(f"job {handle.id}: {result}")
