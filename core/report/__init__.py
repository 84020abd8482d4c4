"""Front-end-neutral presentation of results: flat tables for CSV and number formatting shared
by the reports and the explorer."""
