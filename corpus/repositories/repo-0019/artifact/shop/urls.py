from django.urls import path

from . import views

urlpatterns = [
    path("search/", views.product_search),
    path("review/preview/", views.review_preview),
]
