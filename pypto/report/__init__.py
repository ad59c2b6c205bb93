"""What a run leaves to read: the report and its views, the trace formats, the timeline and
memory-map pages. Built from the simulator's records and the compiled program; imports nothing
of the compiler driver or the run path (``pypto.runtime`` builds a report, this package reads it)."""
