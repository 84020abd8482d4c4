"""Kernel names: one owner for reading and showing them.

* `demangle` — an Itanium C++ demangler (what c++filt prints, bounded on hostile names);
  `readable` is the form people see (demangled, without the parameter list).
* `parts` — a name's parts read without the demangler: a signature cut to its name
  (`strip_args`, `strip_signature`) and a mangled symbol's qualified prefix.
* `display` — short names for table cells (`short_name`, `distinct_short_names`).
* `visible` — a string from a trace made safe to print.

Pure string functions: nothing here imports the rest of kerneldiff. The demangler is imported
only where a name is mangled (most traces have none), so this package's `__init__` imports nothing.
"""
