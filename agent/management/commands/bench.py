"""`manage.py bench <target>`: speed and scale figures, printed and optionally written as JSON.

Each target lives in its app (`ops/bench.py`, …; this command sits in `agent`, the highest app it
runs, so it names no app above its own) and runs against its own database
(<name>_bench_<target>) so benchmarks never pollute real data or each other; `chat` runs
against the current database through a real gunicorn and removes what it wrote.
"""
from core.commands import TargetCommand


class Command(TargetCommand):
    help = ("Benchmarks: ops (query tools and POS ingest at 1M orders), retrieval, ingest (uploads published at scale), workflow, "
            "chat (gunicorn under load).")
    targets = {
        "chat": "agent.bench.bench_chat",
        "ingest": "knowledge.bench.bench_ingest",
        "ops": "ops.bench.bench_ops",
        "retrieval": "knowledge.bench.bench_retrieval",
        "workflow": "workflow.bench.bench_workflow",
    }

    def add_arguments(self, parser):
        super().add_arguments(parser)
        parser.add_argument("--orders", type=int, default=1_000_000, help="ops: orders to seed in the bench database")
        parser.add_argument("--days", type=int, default=365, help="ops: days of history the orders spread over")
        parser.add_argument("--queries", type=int, default=200, help="how many timed queries")
        parser.add_argument("--chunks", type=int, default=100_000, help="retrieval: synthetic chunks")
        parser.add_argument("--documents", type=int, default=500, help="ingest: generated DOCX documents to upload and publish")
        parser.add_argument("--levels", default="1,4,16", help="chat: concurrent clients per level, comma-separated")
        parser.add_argument("--workers", type=int, help="chat: gunicorn workers (default: gunicorn.conf.py)")
        parser.add_argument("--cpu-chats", type=int, default=20, help="chat: serial chats per intent for the CPU figure")
        parser.add_argument("--profile", action="store_true", help="chat: print the top 15 functions of one policy and one data chat")
        parser.add_argument("--reload", action="store_true", help="retrieval: rebuild the synthetic corpus even if present")
