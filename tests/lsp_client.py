"""A minimal Language Server Protocol client for tests: JSON-RPC over a subprocess's pipes.

Every wait has a timeout, and the server is killed on close, so a broken server fails a test
instead of hanging the suite.
"""

from __future__ import annotations

import json
import queue
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable, Optional


class LspError(AssertionError):
    pass


class LspClient:
    def __init__(self, command: list[str], cwd: Optional[Path] = None, env: Optional[dict] = None):
        self._stderr = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr, cwd=cwd, env=env
        )
        self._messages: "queue.Queue[dict]" = queue.Queue()
        self.notifications: list[dict] = []  # everything the server sent that was not a response
        self._responses: dict[int, dict] = {}
        self._next_id = 0
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    # -- wire ------------------------------------------------------------------------------------
    def _read(self) -> None:
        out = self.proc.stdout
        while True:
            headers = {}
            while True:
                line = out.readline()
                if not line:
                    return
                line = line.decode("ascii").strip()
                if not line:
                    break
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
            body = out.read(int(headers["content-length"]))
            self._messages.put(json.loads(body.decode("utf-8")))

    def _send(self, message: dict) -> None:
        body = json.dumps(message).encode("utf-8")
        self.proc.stdin.write(f"Content-Length: {len(body)}\r\n\r\n".encode("ascii") + body)
        self.proc.stdin.flush()

    def _pump(self, timeout: float) -> None:
        """Take one message off the wire (answering server requests) or raise on timeout."""
        try:
            msg = self._messages.get(timeout=timeout)
        except queue.Empty:
            return
        if "id" in msg and "method" in msg:  # a request from the server: accept it
            self._send({"jsonrpc": "2.0", "id": msg["id"], "result": None})
            self.notifications.append(msg)
        elif "id" in msg:
            self._responses[msg["id"]] = msg
        else:
            self.notifications.append(msg)

    # -- API ---------------------------------------------------------------------------------------
    def notify(self, method: str, params: Any) -> None:
        self._send({"jsonrpc": "2.0", "method": method, "params": params})

    def request(self, method: str, params: Any, timeout: float = 60) -> Any:
        self._next_id += 1
        rid = self._next_id
        self._send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        deadline = time.monotonic() + timeout
        while rid not in self._responses:
            left = deadline - time.monotonic()
            if left <= 0 or self.proc.poll() is not None and self._messages.empty():
                raise LspError(f"no response to {method} within {timeout}s; stderr:\n{self.stderr()}")
            self._pump(min(left, 0.2))
        msg = self._responses.pop(rid)
        if "error" in msg:
            raise LspError(f"{method} failed: {msg['error']}")
        return msg.get("result")

    def wait_for(self, method: str, where: Callable[[dict], bool] = lambda p: True, timeout: float = 60) -> dict:
        """The params of the first notification `method` (received now or later) matching where;
        it is consumed so that the next wait sees only later ones."""
        deadline = time.monotonic() + timeout
        while True:
            for i, msg in enumerate(self.notifications):
                if msg.get("method") == method and where(msg.get("params")):
                    del self.notifications[i]
                    return msg["params"]
            left = deadline - time.monotonic()
            if left <= 0:
                seen = [m.get("method") for m in self.notifications]
                raise LspError(f"no {method} within {timeout}s (saw {seen}); stderr:\n{self.stderr()}")
            self._pump(min(left, 0.2))

    def drain(self, seconds: float) -> None:
        """Collect whatever arrives during the next seconds."""
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            self._pump(min(left, 0.05))

    def stderr(self) -> str:
        self._stderr.seek(0)
        return self._stderr.read().decode("utf-8", "replace")[-4000:]

    def initialize(self, root: Path, options: Any = None, capabilities: Optional[dict] = None) -> dict:
        result = self.request(
            "initialize",
            {
                "processId": None,
                "rootUri": root.as_uri(),
                "capabilities": capabilities if capabilities is not None else {},
                "initializationOptions": options,
            },
        )
        self.notify("initialized", {})
        return result

    def shutdown(self, timeout: float = 20) -> int:
        """shutdown + exit, as a client does; returns the exit status."""
        try:
            self.request("shutdown", None, timeout=timeout)
            self.notify("exit", None)
            return self.proc.wait(timeout=timeout)
        finally:
            self.close()

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)
        for stream in (self.proc.stdin, self.proc.stdout):
            try:
                stream.close()
            except OSError:
                pass
        self._stderr.close()
