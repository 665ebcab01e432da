"""Where a module's tests are: its import names, test files named or importing it.

Plain helpers for capabilities (not capabilities themselves): the lint agent runs a
module's tests after a fix, the test agent puts new tests beside them.
"""

from __future__ import annotations

import posixpath
import re

from remora.tools.capabilities.registry import CapabilityContext
from remora.tools.capabilities.store_io import scan_text, walk_files

MAX_TEST_FILES = 20


def is_test_file(path: str) -> bool:
    """Whether ``path`` is named like a pytest test module (``test_x.py`` or ``x_test.py``)."""
    base = posixpath.basename(path)
    return base.startswith("test_") or base.endswith("_test.py")


def module_tests(ctx: CapabilityContext, relative: str) -> list[str]:
    """Test files that import the module at ``relative`` or are named after it."""
    names = module_names(relative)
    if not names:
        return []
    stem = posixpath.splitext(posixpath.basename(relative))[0]
    package = names[0].rpartition(".")[0]
    patterns = [
        re.compile(rf"^\s*(?:import|from)\s+{re.escape(name)}(?:\s|\.|$|,)", re.MULTILINE)
        for name in names
    ]
    if package and stem != "__init__":
        patterns.append(
            re.compile(
                rf"^\s*from\s+{re.escape(package)}\s+import\s+[^\n]*\b{re.escape(stem)}\b",
                re.MULTILINE,
            )
        )
    patterns.append(re.compile(rf"^\s*from\s+\.+{re.escape(stem)}\s+import", re.MULTILINE))
    found: list[str] = []
    for candidate in walk_files(ctx, "", (".py",)):
        if not is_test_file(candidate) or candidate == relative:
            continue
        source = scan_text(ctx, candidate)
        if source is None:
            continue
        if posixpath.basename(candidate) in (f"test_{stem}.py", f"{stem}_test.py") or any(
            pattern.search(source) for pattern in patterns
        ):
            found.append(candidate)
        if len(found) >= MAX_TEST_FILES:
            break
    return found


def module_names(relative: str) -> list[str]:
    """The dotted names ``relative`` imports as: from the root, and from ``src/`` if under it."""
    if not relative.endswith(".py"):
        return []
    parts = relative[: -len(".py")].split("/")
    if parts[-1] == "__init__":
        parts = parts[:-1]
    if not parts or not all(part.isidentifier() for part in parts):
        return []
    names = [".".join(parts)]
    if parts[0] == "src" and len(parts) > 1:
        names.insert(0, ".".join(parts[1:]))
    return names
