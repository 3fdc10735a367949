"""Whether a stream is a terminal a person reads: :mod:`.messages` (standard error) and the
CLI's table commands (standard output: ``cli.io.interactive``) ask it, the latter without
importing the message writer."""

from __future__ import annotations

import os
import sys
from typing import Any


def is_terminal(stream: Any = None) -> bool:
    """Whether ``stream`` (standard error by default) is a terminal a person reads."""
    forced = os.environ.get("TTY_COMPATIBLE", "")
    if forced in ("0", "1"):
        return forced == "1"
    stream = sys.stderr if stream is None else stream
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


__all__ = ["is_terminal"]
