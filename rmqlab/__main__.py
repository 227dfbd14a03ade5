"""``python -m rmqlab`` is the ``rmqlab`` command."""

from .cli import program

program()
