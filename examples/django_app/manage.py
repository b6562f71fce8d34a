"""Django's command line for the example (run from the repository root)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "examples.django_app.settings")
    try:
        from django.core.management import execute_from_command_line
    except ModuleNotFoundError:
        sys.exit(
            "this example needs Django, which leasehold does not install: pip install 'django>=4.2'"
        )

    execute_from_command_line(sys.argv)
