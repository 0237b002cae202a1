"""The sans-IO core: what a workflow is and how it replays, with no database, clock or process.

Bottom to top: ``codec`` (durable values; ``filenames`` beside it), ``model`` (records,
requests, outcomes, errors, the name rule), then ``clock``, ``profiles``, ``authoring``
(``@workflow``, the step runner), ``commands`` and ``driver`` (replays a workflow against its
recorded steps and yields the runtime calls it needs). Everything above (runtimes, the engine,
the simulator) is a driver of this driver.
"""
