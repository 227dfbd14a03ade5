"""``python -m rmqlab`` is the ``rmqlab`` command."""

import sys

from .cli import main

sys.exit(main())
