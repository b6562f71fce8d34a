from __future__ import annotations

from django.http import HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from examples.django_app.producer import client
from examples.django_app.tasks import send_welcome
from leasehold import IdempotencyConflict


@csrf_exempt  # an API endpoint for the example; a real form keeps CSRF protection
@require_POST
def welcome(request: HttpRequest) -> JsonResponse:
    email = request.GET.get("email", "")
    if "@" not in email:
        return JsonResponse({"error": "email is required"}, status=422)
    try:
        handle = send_welcome.enqueue(client(), email)
    except IdempotencyConflict as exc:  # the key names another job: say so, do not crash
        return JsonResponse({"error": "conflict", "message": exc.message}, status=409)
    return JsonResponse({"job_id": handle.id}, status=202)
