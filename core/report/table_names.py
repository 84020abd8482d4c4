"""The names of the comparison's flat tables (kerneldiff.core.report.tables), apart from the code
that fills them, so that a command line can offer them before any analysis module is imported."""

WORK_TABLES = ("gemm-shapes", "attention-shapes", "throughput", "peaks")   # the throughput tables
TABLES = ("ledger", "operations", "layers", "pairs", "fusions", "same-kernels", "timeline") + WORK_TABLES + ("warnings",)
