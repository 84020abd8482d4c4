"""The names of the comparison's flat tables (kerneldiff.core.report.tables), apart from the code
that fills them, so that a command line can offer them before any analysis module is imported."""

WORK_TABLES = ("gemm-shapes", "attention-shapes", "throughput", "peaks")   # the throughput tables
TABLES = ("ledger", "operations", "layers", "pairs", "fusions", "same-kernels", "timeline") + WORK_TABLES + ("warnings",)
# tables of the loaded models, not of the comparison alone: built only when one is asked for by name
# (not with `--table all`): the module tree (kerneldiff.core.report.module_table)
MODEL_TABLES = ("modules",)
