from __future__ import annotations

from django.urls import path

from examples.django_app.views import welcome

urlpatterns = [path("welcome", welcome)]
