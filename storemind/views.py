from django.db import connection
from django.http import JsonResponse


def health(request):
    """Liveness for load balancers and compose: the database answers."""
    with connection.cursor() as cur:
        cur.execute("SELECT 1")
    return JsonResponse({"status": "ok", "database": connection.vendor})
