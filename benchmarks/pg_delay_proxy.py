"""A loopback TCP proxy in front of PostgreSQL that adds a delay each way and counts round trips.

Used by bench_pg_ledger.py (and tests/test_pg_round_trips.py) to see what a write costs on a
network rather than on loopback: every byte is forwarded `delay_ms` later than it arrived, in
each direction, so one exchange costs 2 x delay_ms more, however many bytes it carries.

Round trips are counted as the client's flights: a burst of client->server bytes sent after
the server said it is ready again (ReadyForQuery, the end of its answer to a Sync or a
Query), i.e. after the client waited for a whole answer. A client that pipelines several
statements and then waits is one flight, even if early results stream back while it sends;
one that waits for each statement's answer is one per statement.
`syncs` counts the protocol messages that ask the server to answer (Sync, simple Query) for
comparison: a pipeline may carry several of them in one flight.

    proxy = DelayProxy("127.0.0.1", 5432, delay_ms=1).start()   # a thread with its own loop
    url = proxy.url_for(server_url)                               # the same URL, via the proxy
    proxy.reset(); ...; proxy.flights                             # round trips since reset

Also runnable on its own: python benchmarks/pg_delay_proxy.py HOST PORT DELAY_MS.
"""

from __future__ import annotations

import asyncio
import contextlib
import struct
import sys
import threading
import time
from collections import deque

_SSL_REQUEST = 80877103
_GSS_REQUEST = 80877104


class DelayProxy:
    def __init__(self, host: str, port: int, *, delay_ms: float = 0.0) -> None:
        self.host, self.port = host, port
        self.delay_s = delay_ms / 1000
        self.listen_port = 0
        self.flights = 0
        self.syncs = 0
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.Server | None = None
        self._ready = threading.Event()
        self._thread: threading.Thread | None = None
        self._sessions: set[asyncio.Task[None]] = set()

    # --- control (any thread) --------------------------------------------------------------

    def start(self) -> DelayProxy:
        self._thread = threading.Thread(target=self._run, name="pg-delay-proxy", daemon=True)
        self._thread.start()
        self._ready.wait(10)
        return self

    def stop(self) -> None:
        loop = self._loop
        if loop is not None:
            asyncio.run_coroutine_threadsafe(self._shutdown(), loop).result(10)
            loop.call_soon_threadsafe(loop.stop)
        if self._thread is not None:
            self._thread.join(5)

    def reset(self) -> None:
        with self._lock:
            self.flights = 0
            self.syncs = 0

    def counts(self) -> tuple[int, int]:
        with self._lock:
            return self.flights, self.syncs

    def url_for(self, url: str) -> str:
        """`url` (a SQLAlchemy or libpq URL) pointed at this proxy instead of the server."""
        from sqlalchemy.engine import make_url

        u = make_url(url).set(host="127.0.0.1", port=self.listen_port)
        return u.render_as_string(hide_password=False)

    # --- the proxy (its own thread and event loop) ------------------------------------------

    def _run(self) -> None:
        loop = self._loop = asyncio.new_event_loop()
        self._server = loop.run_until_complete(asyncio.start_server(self._serve, "127.0.0.1", 0))
        self.listen_port = self._server.sockets[0].getsockname()[1]
        self._ready.set()
        try:
            loop.run_forever()
        finally:
            self._server.close()
            loop.close()

    async def _shutdown(self) -> None:
        if self._server is not None:
            self._server.close()
        for session in list(self._sessions):
            session.cancel()
        await asyncio.gather(*self._sessions, return_exceptions=True)

    async def _serve(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        me = asyncio.current_task()
        assert me is not None
        self._sessions.add(me)
        try:
            await self._relay(client_r, client_w)
        except asyncio.CancelledError:
            pass  # stopped: the session ends with the proxy
        finally:
            self._sessions.discard(me)

    async def _relay(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        try:
            server_r, server_w = await asyncio.open_connection(self.host, self.port)
        except OSError:
            client_w.close()
            return
        # Whether the server spoke since the client's last flight: the next client bytes are
        # then a new round trip.
        state = {"answered": True}
        parser = _ClientMessages()
        up = asyncio.create_task(self._pump(client_r, server_w, state, parser))
        down = asyncio.create_task(self._pump(server_r, client_w, state, _ServerMessages(parser)))
        try:
            await asyncio.wait({up, down}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (up, down):
                task.cancel()
            await asyncio.gather(up, down, return_exceptions=True)
            for w in (client_w, server_w):
                w.close()
                with contextlib.suppress(OSError, asyncio.CancelledError):
                    await w.wait_closed()

    async def _pump(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        state: dict[str, bool],
        parser: _ClientMessages | _ServerMessages,
    ) -> None:
        # Bytes are released in order, each `delay_s` after it arrived: a delay line, not a
        # throttle, so a pipelined burst pays the delay once.
        queue: deque[tuple[float, bytes]] = deque()
        wake = asyncio.Event()
        done = False

        async def release() -> None:
            while True:
                if not queue:
                    if done:
                        return
                    wake.clear()
                    await wake.wait()
                    continue
                due, data = queue[0]
                wait = due - time.monotonic()
                if wait > 0:
                    await asyncio.sleep(wait)
                queue.popleft()
                writer.write(data)
                await writer.drain()

        sender = asyncio.create_task(release())
        try:
            while True:
                data = await reader.read(65536)
                if not data:
                    break
                with self._lock:
                    if isinstance(parser, _ClientMessages):
                        if state["answered"]:
                            self.flights += 1
                            state["answered"] = False
                        self.syncs += parser.feed(data)
                    elif parser.feed(data):
                        state["answered"] = True
                queue.append((time.monotonic() + self.delay_s, data))
                wake.set()
        except (OSError, asyncio.IncompleteReadError):
            pass  # the other side went away: the session ends
        finally:
            done = True
            wake.set()
            sender.cancel()
            await asyncio.gather(sender, return_exceptions=True)


class _ClientMessages:
    """Splits the client's byte stream into protocol messages; counts the ones that ask the
    server for an answer (Sync 'S', simple Query 'Q')."""

    def __init__(self) -> None:
        self._buf = b""
        self._startup = True
        #: Encryption requests the server answers with one untyped byte ('N', 'S', 'G').
        self.untyped_replies = 0

    def feed(self, data: bytes) -> int:
        self._buf += data
        answered = 0
        while True:
            if self._startup:
                if len(self._buf) < 8:
                    return answered
                (length,) = struct.unpack("!I", self._buf[:4])
                if len(self._buf) < length:
                    return answered
                (code,) = struct.unpack("!I", self._buf[4:8])
                self._buf = self._buf[length:]
                if code in (_SSL_REQUEST, _GSS_REQUEST):
                    self.untyped_replies += 1
                else:
                    self._startup = False  # the StartupMessage: typed messages follow
                continue
            if len(self._buf) < 5:
                return answered
            kind = self._buf[:1]
            (length,) = struct.unpack("!I", self._buf[1:5])
            if len(self._buf) < 1 + length:
                return answered
            self._buf = self._buf[1 + length :]
            if kind in (b"S", b"Q"):
                answered += 1


class _ServerMessages:
    """Splits the server's byte stream into messages; counts ReadyForQuery ('Z')."""

    def __init__(self, client: _ClientMessages) -> None:
        self._client = client
        self._buf = b""

    def feed(self, data: bytes) -> int:
        self._buf += data
        ready = 0
        while True:
            if self._client.untyped_replies and self._buf:
                self._client.untyped_replies -= 1
                self._buf = self._buf[1:]
                continue
            if len(self._buf) < 5:
                return ready
            (length,) = struct.unpack("!I", self._buf[1:5])
            if len(self._buf) < 1 + length:
                return ready
            if self._buf[:1] == b"Z":
                ready += 1
            self._buf = self._buf[1 + length :]


def main() -> int:
    host, port, delay = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
    proxy = DelayProxy(host, port, delay_ms=delay).start()
    print(f"127.0.0.1:{proxy.listen_port} -> {host}:{port}, +{delay} ms each way", flush=True)
    try:
        while True:
            time.sleep(5)
            flights, syncs = proxy.counts()
            print(f"round trips {flights}, syncs {syncs}", flush=True)
    except KeyboardInterrupt:
        proxy.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
