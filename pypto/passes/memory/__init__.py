"""Memory planning shared by the planner passes (``allocate_memory_addr``, ``bind_regions``).

Public within :mod:`pypto.passes`, private outside it: tile storage and liveness
(``tile_storage``), buffers and their capacity checks (``storage_groups``), and the
pipeline-depth gate that trades slots for storage (``pipeline_gate``).
"""
