"""``remora eval``: Remora's agents against the best deterministic tools, on a real package.

For a package named by a pip requirement or a path, each operation is measured on a seeded
selection of its modules or functions, Remora and the baselines side by side on identical
scratch copies, in one run. See :func:`run_eval` and ``docs/evaluation.md``.
"""
