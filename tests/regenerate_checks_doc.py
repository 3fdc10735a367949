"""Rewrite ``docs/checks.md`` from the catalog of checks (``nvtopo/checks/catalog.py``).

``tests/test_catalog.py`` fails when the page and the catalog differ; then run, from the
checkout::

    python tests/regenerate_checks_doc.py
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "checks.md"


def main() -> None:
    sys.path.insert(0, str(ROOT))
    from nvtopo.render.catalog import markdown

    PAGE.write_text(markdown(), encoding="utf-8")
    print(f"wrote {PAGE.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
