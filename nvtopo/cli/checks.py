"""``nvtopo checks [CODE]``: the catalog of finding codes, or one code explained."""

from typing import Optional

import typer

from ..errors import NvtopoError
from .io import console, handles_errors, print_json
from .options import Format, format_option


@handles_errors
def checks_cmd(
    code: Optional[str] = typer.Argument(None, metavar="CODE",
                                         help="A finding code, e.g. nvlink.link_down."),
    fmt: Format = format_option(Format.table, help="table (Rich) or json."),
) -> None:
    """List every finding code nvtopo can emit (family, severities, meaning), or explain
    one: what it means, the evidence it needs, its severities by how sure the evidence
    is, what to do, and an example finding line (docs/checks.md).

    Exit status: 0, or 2 for a code nvtopo does not emit.

    Examples:

      nvtopo checks

      nvtopo checks ib.port_down

      nvtopo checks --format json
    """
    from ..checks import catalog
    from ..render import catalog as render_catalog

    if code is None:
        if fmt is Format.json:
            print_json(catalog.document())
        else:
            render_catalog.print_catalog(console())
        return
    check = catalog.get(code)
    if check is None:
        raise NvtopoError(f"unknown code {code!r}: `nvtopo checks` lists them", where="checks")
    if fmt is Format.json:
        print_json(catalog.document((check.code,)))
    else:
        render_catalog.print_check(check, console())
