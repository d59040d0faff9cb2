"""Servers the end-to-end tests start: a free port, and a live Django server thread on the
committed test database (pytest-django's live_server would flush the seeded data)."""
import socket
from contextlib import contextmanager


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def live_server(wrap=lambda app: app):
    """A live server thread (`wrap`: e.g. StaticFilesHandler to serve static files); its URL."""
    from django.test.testcases import LiveServerThread

    thread = LiveServerThread("127.0.0.1", wrap, port=0)
    thread.daemon = True
    thread.start()
    thread.is_ready.wait()
    if thread.error:
        raise thread.error
    try:
        yield f"http://127.0.0.1:{thread.port}"
    finally:
        thread.terminate()
