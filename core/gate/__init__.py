"""A regression gate: two traces (a base and a new one) in, one verdict out, with the checks, the
noise they were judged against and the largest changes behind them. Analysis only; the CLI renders
it (`kerneldiff gate BASE NEW`, kerneldiff.cli.gate) through `Session.gate`."""
