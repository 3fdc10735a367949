"""Exit statuses and the one error type the CLI turns into a one-line message."""

from __future__ import annotations

import enum
from typing import Optional


class ExitStatus(enum.IntEnum):
    """Process exit statuses, shared by every command."""

    OK = 0  #: ran; nothing wrong (``check``: no error finding)
    FINDINGS = 1  #: ran; found something wrong (``check``: at least one error finding)
    ERROR = 2  #: could not run: bad input, no data, bad usage


class NvtopoError(Exception):
    """A problem the user can fix: bad input, missing tool, no data.

    The CLI prints ``nvtopo: <where>: <message>`` on one line and exits with
    :attr:`ExitStatus.ERROR`; no traceback.
    """

    def __init__(self, message: str, where: Optional[str] = None,
                 hint: Optional[str] = None) -> None:
        super().__init__(message)
        self.message = message
        self.where = where
        self.hint = hint

    def __str__(self) -> str:
        return f"{self.where}: {self.message}" if self.where else self.message
