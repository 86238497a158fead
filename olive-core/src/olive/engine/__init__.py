"""The engine: resolves a workflow's passes, searches, caches pass runs and writes the outputs.

A run, in order (``olive.workflows.run``):

1. ``load_workflow_config`` validates the file (every error names its JSON path);
2. ``engine.plan.resolve_plan`` loads each pass class and its identity from the registry and resolves its
   config and search space, so every bad param is reported before anything runs (``olive run --dry-run``
   stops here);
3. ``engine.engine.Engine`` evaluates the input model, then searches: the sampler suggests points, each
   point is a trial (``engine.trial``: the pass chain through the content-addressed cache, ``olive.cache``,
   then the evaluation) run by an executor (``engine.executors``: inline by default, local processes or
   Ray), and ``engine.recording`` records every trial's events (``engine.results``) in the footprint
   (``engine.footprint``), firing the observer hooks as it does; ``engine.choice`` picks the best under
   the goals;
4. ``engine.output_writer.write_outputs`` writes the model, ``model_config.json``, ``metrics.json``,
   ``footprint.json``, ``run_history.txt`` and ``report.html``, then any registered output writer.

What a run returns is ``engine.output.WorkflowOutput``.
"""
