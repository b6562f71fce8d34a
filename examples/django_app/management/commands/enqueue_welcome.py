from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from examples.django_app.producer import client
from examples.django_app.tasks import send_welcome


class Command(BaseCommand):
    help = "Enqueue a welcome mail and wait for the worker to send it."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("email")
        parser.add_argument("--wait", type=float, default=10.0, help="seconds to wait")

    def handle(self, *args: Any, **options: Any) -> None:
        handle = send_welcome.enqueue(client(), options["email"])
        self.stdout.write(f"job {handle.id}: {handle.result(timeout=options['wait'])}")
