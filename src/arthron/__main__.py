"""``python -m arthron``: the same as the ``arthron`` command."""
import sys

from .cli import main

sys.exit(main())
