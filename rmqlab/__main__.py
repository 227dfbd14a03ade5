"""``python -m rmqlab`` is the ``rmqlab`` command."""

import sys

from .cli import command

sys.exit(command())
