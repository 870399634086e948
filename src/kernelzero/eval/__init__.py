"""Evaluation of a model or a folder of solutions on a task set: solving, pass@k and fast_p metrics, report, plots."""
