"""A TCP proxy the test controls, to cut one client off from Kafka while the others still reach it.

``TcpProxy(target_port)`` listens on a free loopback port and forwards each connection to
``127.0.0.1:target_port``. ``cut()`` is a network partition: no byte moves either way any more and new
connections are accepted but never answered, so the client sees silence (timeouts), not a refusal.
``heal()`` closes what hung, so the client reconnects as it would after a partition.

Kafka clients connect to the addresses the broker advertises, not only to the bootstrap address:
the broker gives the proxy its own listener whose advertised port is the proxy's
(``KafkaBroker(extra_listener=...)``), so a client bootstrapped through the proxy stays behind it.
"""

from __future__ import annotations

import select
import socket
import threading

__all__ = ["TcpProxy"]


class TcpProxy:
    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self._listener = socket.socket()
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(128)
        self.port = self._listener.getsockname()[1]
        self._cut = threading.Event()
        self._closed = threading.Event()
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []

    def start(self) -> TcpProxy:
        threading.Thread(target=self._accept, name=f"proxy-{self.port}", daemon=True).start()
        return self

    def cut(self) -> None:
        """From now on nothing passes, in either direction, on old or new connections."""
        self._cut.set()

    def heal(self) -> None:
        """Close every connection (the hung ones too) and forward again: clients reconnect."""
        with self._lock:
            hung, self._sockets = self._sockets, []
        for s in hung:
            _close(s)
        self._cut.clear()

    def close(self) -> None:
        self._closed.set()
        _close(self._listener)
        self.heal()

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            with self._lock:
                self._sockets.append(client)
            if self._cut.is_set():
                continue  # accepted, never answered: a partitioned network
            try:
                upstream = socket.create_connection(("127.0.0.1", self.target_port), timeout=5)
            except OSError:
                _close(client)
                continue
            with self._lock:
                self._sockets.append(upstream)
            threading.Thread(target=self._pump, args=(client, upstream), daemon=True).start()

    def _pump(self, a: socket.socket, b: socket.socket) -> None:
        peer = {a: b, b: a}
        try:
            while not self._closed.is_set():
                if self._cut.is_set():  # hold everything: the bytes stay in the kernel's buffers, unread
                    self._closed.wait(0.2)
                    if a.fileno() < 0 or b.fileno() < 0:
                        return
                    continue
                ready, _, _ = select.select([a, b], [], [], 0.2)
                for s in ready:
                    data = s.recv(65536)
                    if not data:
                        return
                    peer[s].sendall(data)
        except (OSError, ValueError):
            pass
        finally:
            _close(a)
            _close(b)


def _close(s: socket.socket) -> None:
    try:
        s.close()
    except OSError:
        pass
