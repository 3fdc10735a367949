"""One CliRunner for every CLI test: stderr kept apart from stdout.

Click >= 8.2 (and typer's bundled click) always separates them and has no
``mix_stderr``; click 8.1, the newest for Python 3.9, mixes stderr into
stdout unless given ``mix_stderr=False``.
"""

from typer.testing import CliRunner


def make_runner() -> CliRunner:
    try:
        return CliRunner(mix_stderr=False)  # type: ignore[call-arg]
    except TypeError:
        return CliRunner()
