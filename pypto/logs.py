"""pypto's messages go through ``logging`` under the ``pypto`` logger.

``configure()`` applies ``$PYPTO_LOG_LEVEL`` to that logger when it is set (otherwise the
level an application gave the logger stands; unset, WARNING and above show). Nothing is
printed by pypto directly: with no logging set up by the application, WARNING and above
reach stderr through Python's last-resort handler; a lower level gets a plain stderr
handler of its own, so ``PYPTO_LOG_LEVEL=INFO`` shows INFO lines without any setup.
"""

from __future__ import annotations

import logging
import sys

from pypto import knobs

LOGGER = logging.getLogger("pypto")
_HANDLER_NAME = "pypto-stderr"


def configure() -> logging.Logger:
    """Sets the ``pypto`` logger's level from the knob (cheap; called at each fresh compile)."""
    if not knobs.LOG_LEVEL.is_set():
        return LOGGER
    level = getattr(logging, knobs.log_level())
    LOGGER.setLevel(level)
    ours = [h for h in LOGGER.handlers if h.get_name() == _HANDLER_NAME]
    wants_handler = level < logging.WARNING and not logging.getLogger().handlers
    if wants_handler and not ours:
        handler = logging.StreamHandler(sys.stderr)
        handler.set_name(_HANDLER_NAME)
        handler.setFormatter(logging.Formatter("%(message)s"))
        LOGGER.addHandler(handler)
    elif not wants_handler:
        for h in ours:
            LOGGER.removeHandler(h)
    return LOGGER
