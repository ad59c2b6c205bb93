"""Pipe-synchronisation analysis used by ``insert_sync``.

Public within :mod:`pypto.passes`, private outside it: the per-pipe access state and its
merge (``sync_state``), and the slot period of ping-pong buffers (``slot_period``).
"""
