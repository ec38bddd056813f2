"""Re-run every notebook here in place, so the committed outputs are fresh (`make notebooks`)."""

from __future__ import annotations

import sys
from pathlib import Path

import nbclient
import nbformat

HERE = Path(__file__).parent


def main() -> int:
    for path in sorted(HERE.glob("*.ipynb")):
        notebook = nbformat.read(path, as_version=4)
        nbclient.NotebookClient(
            notebook,
            timeout=600,
            kernel_name="python3",
            resources={"metadata": {"path": str(HERE)}},
        ).execute()
        nbformat.write(notebook, path)
        print(f"executed {path.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
