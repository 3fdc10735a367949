"""What every command does with the terminal: one-line errors, JSON, tables, ``-o FILE``."""

from __future__ import annotations

import functools
import json
import sys
from typing import Any, Callable, Optional, TypeVar

import typer

from ..errors import ExitStatus, NvtopoError

F = TypeVar("F", bound=Callable[..., Any])


def say(line: str) -> None:
    """One message on stderr, through the one writer (:func:`nvtopo.render.messages.say`):
    one line when piped, wrapped at spaces on a terminal, flushed."""
    from ..render import messages

    messages.say(line)


def err(message: str) -> None:
    say(f"nvtopo: error: {message}")


def handles_errors(fn: F) -> F:
    """Turn :class:`NvtopoError` into one line on stderr and exit status 2."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except NvtopoError as exc:
            err(str(exc))
            raise typer.Exit(int(ExitStatus.ERROR)) from None
        except BrokenPipeError:
            raise typer.Exit(int(ExitStatus.OK)) from None

    return wrapper  # type: ignore[return-value]


def console() -> Any:
    """A Rich console for table output (rich is imported here, for tables only)."""
    import os

    from rich.console import Console

    class _Console(Console):
        def on_broken_pipe(self) -> None:
            # The reader went away (`| head`): not a failure of ours, and exit 1 means findings.
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            raise SystemExit(int(ExitStatus.OK))

    # Renderers hand Rich Text objects, never markup; a str that slipped through is printed
    # as it is, not parsed (no [link=...] from data, no :emoji: codes).
    return _Console(highlight=False, markup=False, emoji=False)


def print_json(data: Any) -> None:
    # ensure_ascii: control characters and lone surrogates (valid JSON "\ud800") are written
    # as \uXXXX escapes, so the document can always be encoded and never moves the terminal
    sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=True) + "\n")
    sys.stdout.flush()


def check_output(output: Optional[str]) -> None:
    """An ``-o`` value that cannot be written (empty, a directory, a file in a directory
    that does not exist) fails before any probing."""
    if output is None:  # (no -o: nothing to check, and nvtopo.output is not imported)
        return
    from .. import output as output_mod

    output_mod.check(output)


def emit(text: str, output: Optional[str], wrote: str = "") -> None:
    """``text`` to standard output, or to ``output`` (see :func:`nvtopo.output.write`); a
    file written is said on standard error."""
    from .. import output as output_mod

    if output_mod.write(text, output):
        say(f"nvtopo: wrote {output}{wrote}")


def interactive() -> bool:
    """Whether standard output is a terminal a person reads (``TTY_COMPATIBLE`` decides
    where set): the screens that differ for a person (audit's failing nodes, links' folded
    healthy GPUs, layouts show's table).  Forced colour (``FORCE_COLOR``) is not enough."""
    from ..render.tty import is_terminal

    return is_terminal(sys.stdout)


def to_terminal(output: Optional[str]) -> bool:
    """Whether output goes to standard output (``-o`` absent or ``-``), where a table is
    printed by Rich rather than exported."""
    return output in (None, "-")
