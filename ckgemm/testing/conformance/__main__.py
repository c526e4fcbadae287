"""``python -m ckgemm.testing.conformance --help``"""
from .cli import main

raise SystemExit(main())
