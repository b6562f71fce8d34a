from __future__ import annotations

from django.http import HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from examples.django_app.producer import client
from examples.django_app.tasks import send_welcome


@csrf_exempt  # an API endpoint for the example; a real form keeps CSRF protection
@require_POST
def welcome(request: HttpRequest) -> JsonResponse:
    email = request.GET.get("email", "")
    if "@" not in email:
        return JsonResponse({"error": "email is required"}, status=422)
    handle = send_welcome.enqueue(client(), email)
    return JsonResponse({"job_id": handle.id}, status=202)
