from django.urls import path

from .api import views

app_name = "ops-api"
urlpatterns = [
    path("orders", views.OrdersView.as_view(), name="orders"),
    path("inventory/adjustments", views.InventoryAdjustmentsView.as_view(), name="inventory-adjustments"),
    path("catalog", views.CatalogView.as_view(), name="catalog"),
    path("stores", views.StoresView.as_view(), name="stores"),
    path("sales/summary", views.SalesSummaryView.as_view(), name="sales-summary"),
    path("sales/daily", views.SalesDailyView.as_view(), name="sales-daily"),
    path("sales/products", views.SalesProductView.as_view(), name="sales-products"),
    path("sales/products/daily", views.SalesProductDailyView.as_view(), name="sales-products-daily"),
    path("sales/channels", views.SalesChannelView.as_view(), name="sales-channels"),
    path("sales/compare", views.SalesCompareView.as_view(), name="sales-compare"),
    path("stock/products", views.StockProductView.as_view(), name="stock-products"),
]
