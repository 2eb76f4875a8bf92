"""One module per model family: its markers and its quirks, nothing else.

Importing this package registers every built-in family: each module in this folder is
imported, in name order, and registers its classes with ``@register``. A new family is a
new module here and nothing else (no list to extend); no module imports another family's.
"""

from importlib import import_module
from pkgutil import iter_modules

MODULES: tuple[str, ...] = tuple(sorted(m.name for m in iter_modules(__path__)))
"""The family modules found in this package (the registry's built-in families are theirs)."""

for _name in MODULES:
    import_module(f"{__name__}.{_name}")
