from datetime import date

from django.core.management.base import BaseCommand, CommandError
from django.db import transaction
from tqdm import tqdm

from ops import seed
from ops.models import Inventory, InventoryAdjustment, Member, Order, Product, Store


class Command(BaseCommand):
    help = "Seed deterministic demo ops data (stores, products, members, orders, inventory)."

    def add_arguments(self, parser):
        parser.add_argument("--stores", type=int, default=4)
        parser.add_argument("--days", type=int, default=60)
        parser.add_argument("--seed", type=int, default=42)
        parser.add_argument("--end-date", type=date.fromisoformat, default=None, help="last trading day, seeded whole (default: today, up to this moment)")
        parser.add_argument("--orders", type=int, default=None, help="approximate total orders (scales daily volume)")
        parser.add_argument("--reset", action="store_true", help="delete existing ops data first")
        parser.add_argument("--if-empty", action="store_true", help="do nothing when ops data already exists")

    def handle(self, *args, **opts):
        if opts["if_empty"] and seed.has_ops_data():
            self.stdout.write("seed_ops: ops data already present, nothing to do.")
            return
        if opts["reset"]:
            from django.db.models import ProtectedError

            try:
                self._reset()
            except ProtectedError as exc:
                raise CommandError(
                    f"cannot reset: {len(exc.protected_objects)} proposals, audit rows or other records still refer to these "
                    "stores/products; reset refuses to destroy business history"
                ) from None
        self._seed(opts)

    @transaction.atomic
    def _reset(self):
        InventoryAdjustment.objects.all().delete()
        Order.objects.all().delete()
        Inventory.objects.all().delete()
        Member.objects.all().delete()
        Product.objects.all().delete()
        Store.objects.all().delete()

    def _seed(self, opts):
        with tqdm(total=opts["days"], desc="seed_ops", unit="day", file=self.stderr, disable=opts["verbosity"] == 0) as bar:
            try:
                report = seed.ops_seed(
                    stores=opts["stores"], days=opts["days"], seed=opts["seed"], end_date=opts["end_date"],
                    orders=opts["orders"], progress=bar.update,
                )
            except ValueError as exc:
                raise CommandError(str(exc)) from exc
        self.stdout.write(
            f"seed_ops: {report.stores} stores, {report.products} products, {report.members} members, "
            f"{report.orders} orders, {report.lines} order lines, {report.low_stock} items below safety stock, "
            f"{report.start} to {report.end}"
        )
