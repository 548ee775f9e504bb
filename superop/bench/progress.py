"""A small progress display for long benchmark runs.

On a terminal: one self-overwriting status line (bar, done/total, elapsed, ETA, what runs
now). Not on a terminal (CI logs, ``| tee``): one plain line per note, throttled, so logs
stay readable. ``enabled=False`` silences it (tests)."""
from __future__ import annotations

import shutil
import sys
import time
from typing import Optional, TextIO


class Progress:
    def __init__(self, stream: Optional[TextIO] = None, enabled: bool = True,
                 min_interval: float = 2.0):
        self.stream = stream or sys.stderr
        self.enabled = enabled
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.total = 0
        self.done = 0
        self.t0 = time.monotonic()
        self.msg = ""
        self._last = 0.0
        self.min_interval = min_interval

    def start(self, total: int) -> None:
        self.total, self.done, self.t0 = max(total, 0), 0, time.monotonic()
        self._draw(force=True)

    def note(self, msg: str) -> None:
        self.msg = msg
        self._draw()

    def advance(self, k: int = 1) -> None:
        self.done = min(self.total, self.done + k) if self.total else self.done + k
        self._draw()

    def warn(self, msg: str) -> None:
        if not self.enabled:
            return
        if self.tty:
            self.stream.write("\r\033[K")
        self.stream.write(f"! {msg}\n")
        self.stream.flush()
        self._draw(force=True)

    def finish(self) -> None:
        if not self.enabled:
            return
        self.done = self.total
        self.msg = "done"
        self._draw(force=True)
        if self.tty:
            self.stream.write("\n")
            self.stream.flush()

    def line(self) -> str:
        el = time.monotonic() - self.t0
        if self.total:
            frac = self.done / self.total
            eta = (el / frac - el) if frac > 0 else None
            width = 20
            bar = "#" * int(frac * width) + "." * (width - int(frac * width))
            eta_s = f" eta {_fmt(eta)}" if eta is not None and self.done < self.total else ""
            return f"[{bar}] {self.done}/{self.total} {_fmt(el)}{eta_s}  {self.msg}"
        return f"{_fmt(el)}  {self.msg}"

    def _draw(self, force: bool = False) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if self.tty:
            cols = shutil.get_terminal_size((100, 20)).columns
            self.stream.write("\r\033[K" + self.line()[: cols - 1])
            self.stream.flush()
        elif force or now - self._last >= self.min_interval:
            self.stream.write(self.line() + "\n")
            self.stream.flush()
        else:
            return
        self._last = now


def _fmt(s: Optional[float]) -> str:
    if s is None:
        return "?"
    s = int(s)
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60}:{s % 60:02d}"
