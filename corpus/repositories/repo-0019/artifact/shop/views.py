from django.db import connection
from django.http import HttpResponse, JsonResponse
from django.utils.safestring import mark_safe


def product_search(request):
    term = request.GET.get("q", "")
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT id, name, price FROM shop_product WHERE name ILIKE '%{term}%'")
        rows = cursor.fetchall()
    return JsonResponse({"results": [{"id": r[0], "name": r[1], "price": str(r[2])} for r in rows]})


def review_preview(request):
    text = request.POST.get("text", "")
    html = mark_safe("<div class='review'>" + text + "</div>")
    return HttpResponse(html)
