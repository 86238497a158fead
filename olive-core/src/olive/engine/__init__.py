"""The engine: resolves a workflow's passes, searches, caches pass runs and writes the outputs.

A run, in order (``olive.workflows.run``):

1. ``load_workflow_config`` validates the file (every error names its JSON path);
2. ``engine.plan.resolve_plan`` loads each pass class and resolves its config and search space, so every
   bad param is reported before anything runs (``olive run --dry-run`` stops here);
3. ``engine.engine.Engine`` evaluates the input model, asks the sampler for points, runs each pass through
   the content-addressed cache (``olive.cache``), evaluates candidates and picks the best under the goals;
4. ``engine.outputs.write_outputs`` writes the model, ``model_config.json``, ``metrics.json``,
   ``footprint.json`` and ``run_history.txt``, then any registered output writer.

With ``search_strategy.executor`` other than ``sequential``, step 3 hands each search point to a worker
as a trial (``engine.trial.run_trial``: the pass chain through the shared cache, then the evaluation) on
local processes or Ray (``engine.executors``); the engine records the results as if it had run them.

Observer hooks fire around the workflow, each pass run (``cached=True`` for cache hits) and each evaluation.
"""
