"""``python -m memory_core.cli``: memctl, as the console script runs it."""

from . import main

main()
