"""The scoring harness: scenarios fanned out over Spark, scores aggregated per strategy.

`options` (parameters and their checks), `columns` (score rows as Arrow batches) and `reports`
(summary.md, summary.csv, run.json) are plain Python; `job` is the only module that imports
pyspark. Run it as `python -m rebalancing.harness --help`, or submit
`jobs/score_strategies.py` with spark-submit.
"""
