"""Reading one trace's structure: kernel categories, passes and phases, layers, and the joins
from a kernel to the operator and Python stack that launched it."""
