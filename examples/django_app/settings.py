"""Just enough Django for the example: no database, one view, one management command."""

from __future__ import annotations

SECRET_KEY = "example-only-not-secret"
DEBUG = False
ALLOWED_HOSTS = ["127.0.0.1", "localhost", "testserver"]
INSTALLED_APPS = ["examples.django_app"]
ROOT_URLCONF = "examples.django_app.urls"
DATABASES: dict[str, object] = {}
USE_TZ = True
