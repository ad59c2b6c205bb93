"""The error a sweep or an autotune raises when it cannot run as asked."""

from pypto.errors import PyptoError


class TuneError(PyptoError, ValueError):
    """A sweep or an autotune that cannot run as asked (the message says what to change)."""
