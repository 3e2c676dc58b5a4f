"""Allows ``python -m flockrun ...`` (same as the ``flockrun`` script)."""

import sys

from flockrun.cli import main

sys.exit(main())
