"""The learning study: a controlled task family, a compositional kernel writer and the cold-start corpus.

Read in this order: `family` (the tasks and the train/test split of API pairs), `writer` (a Triton `ModelNew` for a
family task, written by rule, no language model), `corpus` (writer solutions judged `ok`, stored in the export
format, and the check that no test pair leaked into it), `models` (the from-scratch tokenizer and decoders),
`config` (the study's sizes, its SFT stopping rule and its arms), `sft` (the cold start of either role), `run` (the
driver behind `kernelzero study`: corpus -> models -> SFT -> eval -> co-evolution rounds -> eval) and `report`
(summary.json, report.md, plots). Nothing outside the study imports it except its command: the judge and the
trainers never see the writer.
"""
