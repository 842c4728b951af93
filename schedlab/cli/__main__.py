"""``python -m schedlab.cli``: the `schedlab` command."""

import sys

from schedlab.cli import main

if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
