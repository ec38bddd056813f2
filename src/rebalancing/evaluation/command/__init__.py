"""On top of the stages, the command line: a Profile (a user's group, read from the options)
drives scenarios -> scoring -> decision -> report for `rebalancing compare` and
`python -m rebalancing.evaluation`."""
