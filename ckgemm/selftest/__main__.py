"""``python -m ckgemm.selftest``: see ``ckgemm.selftest``."""
import sys

from .cli import main

sys.exit(main())
