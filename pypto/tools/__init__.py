"""Tools for looking inside a compile or a run: ``python -m pypto.tools.<name>``, installed
as the commands ``pypto-clean-sim-trace``, ``pypto-memory-map``, ``pypto-report`` and ``pypto-timeline``.

* ``clean_sim_trace`` — an op-simulator ``visualize_data.bin`` (ours or the vendor's) into a
  Perfetto-ready ``trace.clean.json`` plus ``instr_metrics.json``;
* ``memory_map`` — a pass dump after address assignment into one self-contained HTML page;
* ``report`` — ``diff``: two saved run reports compared (makespan, per pipe, per kernel);
* ``timeline`` — a traced run into one self-contained HTML timeline (task swimlane, a lane
  per pipe per core, flag arrows), readable offline.
"""
