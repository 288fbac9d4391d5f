import yaml
from django.http import HttpResponse
from django.utils.html import format_html


def import_posts(request):
    posts = yaml.safe_load(request.body)
    return HttpResponse(f"imported {len(posts)} posts")


def search(request):
    query = request.GET.get("q", "")
    html = format_html("<p>Results for {}</p>", query)
    return HttpResponse(html)
