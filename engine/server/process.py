"""A Canopy server in a child process, for tests, benchmarks and notebooks.

>>> with ServerProcess(user="admin", password="s3cret") as server:       # doctest: +SKIP
...     pymysql.connect(host=server.host, port=server.port, user="admin", password="s3cret")
"""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from typing import Optional

LISTENING = re.compile(r"listening on (\S+):(\d+)")


class ServerProcess:
    """``python -m engine.server`` on a free port of 127.0.0.1 (``--port 0``); ``args`` are more
    command-line options. :meth:`stop` sends SIGTERM and returns the exit status; the log is kept in
    :attr:`log` (a list of lines)."""

    def __init__(self, *args: str, user: Optional[str] = "admin", password: Optional[str] = "s3cret",
                 env: Optional[dict] = None, start_timeout_s: float = 120.0):
        command = [sys.executable, "-m", "engine.server", "--port", "0", *args]
        if user is not None:
            command += ["--user", user, "--password", password or ""]
        self.user, self.password = user, password
        self.host, self.port = "127.0.0.1", 0
        self.log: list[str] = []
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                        env={**os.environ, **(env or {})})
        self._listening = threading.Event()
        threading.Thread(target=self._read_log, daemon=True).start()
        deadline = time.monotonic() + start_timeout_s
        while not self._listening.wait(0.1):
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.process.kill()
                raise RuntimeError("the server did not start:\n" + "\n".join(self.log[-30:]))

    def _read_log(self) -> None:
        for line in self.process.stdout:
            self.log.append(line.rstrip("\n"))
            match = LISTENING.search(line)
            if match and not self._listening.is_set():
                self.host, self.port = match.group(1), int(match.group(2))
                self._listening.set()

    def stop(self, timeout_s: float = 60.0) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        return self.process.returncode

    def __enter__(self) -> "ServerProcess":
        return self

    def __exit__(self, *exc_info) -> None:
        self.stop()
