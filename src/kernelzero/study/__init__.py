"""The learning study: a controlled task family, a compositional kernel writer and the cold-start corpus.

Read in this order: `family` (the tasks and the train/test split of API pairs), `writer` (a Triton `ModelNew` for a
family task, written by rule, no language model), `corpus` (writer solutions judged `ok`, stored in the export
format, and the check that no test pair leaked into it). Nothing outside the study imports it: the judge and the
trainers never see the writer.
"""
