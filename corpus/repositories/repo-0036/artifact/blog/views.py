import yaml
from django.http import HttpResponse
from django.utils.safestring import mark_safe


def import_posts(request):
    posts = yaml.load(request.body, Loader=yaml.Loader)
    return HttpResponse(f"imported {len(posts)} posts")


def search(request):
    query = request.GET.get("q", "")
    html = mark_safe(f"<p>Results for {query}</p>")
    return HttpResponse(html)
