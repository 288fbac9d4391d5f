from django.http import JsonResponse
from django.shortcuts import render

from .models import Product


def product_search(request):
    term = request.GET.get("q", "")
    rows = Product.objects.filter(name__icontains=term).values("id", "name", "price")[:50]
    return JsonResponse({"results": [{**r, "price": str(r["price"])} for r in rows]})


def review_preview(request):
    return render(request, "shop/review_preview.html", {"text": request.POST.get("text", "")})
