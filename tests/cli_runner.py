"""One CliRunner for every CLI test: stderr kept apart from stdout.

Click >= 8.2 (and typer's bundled click) always separates them and has no
``mix_stderr``; click 8.1, the newest for Python 3.9, mixes stderr into
stdout unless given ``mix_stderr=False``.

Every JSON document a command run through it prints (or writes with ``-o``) is
validated against that command's JSON Schema (``schema_check.check_cli``).
"""

from typer.testing import CliRunner

import schema_check


class _SchemaCheckingRunner(CliRunner):
    check_schemas = True

    def invoke(self, cli, args=None, *rest, **kwargs):  # type: ignore[no-untyped-def]
        result = super().invoke(cli, args, *rest, **kwargs)
        if self.check_schemas:
            schema_check.check_cli(args, result)
        return result


def make_runner(check_schemas: bool = True) -> CliRunner:
    """The suite's runner; ``check_schemas=False`` for a test that validates by itself."""
    try:
        runner = _SchemaCheckingRunner(mix_stderr=False)  # type: ignore[call-arg]
    except TypeError:
        runner = _SchemaCheckingRunner()
    runner.check_schemas = check_schemas
    return runner
