"""A case whose test would change the user's project is never written (issue 47, breach 5).

Observation runs in a sandbox that throws its writes away, so a call that writes
``.git/config`` looked harmless there; its test then wrote the real file at the user's next
``pytest``. The observation child now records what each call writes or deletes outside its
own directory, and cases naming ``.git`` or the project's own path are refused unrun.
"""

from __future__ import annotations

from pathlib import Path

from remora.operations.characterize.inputs import draft, observe_cases, propose_cases
from remora.tools.capabilities import CapabilityContext
from tests.stores import capability_context, write_tree

MODULE = """import os


def save(path, text):
    with open(path, "w") as handle:
        handle.write(text)
    return len(text)


def remove(path):
    os.remove(path)
    return True
"""


def _observed(ctx: CapabilityContext, name: str, cases: list[str]) -> dict[str, tuple[str, str]]:
    propose_cases(ctx, "pkg/mod.py", name, cases)
    observe_cases(ctx, "pkg/mod.py", name)
    return {o.case: (o.verdict, o.reason) for o in draft(ctx, "pkg/mod.py", name).observations}


def test_a_call_that_writes_outside_its_directory_is_refused(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "proj", {"pkg/__init__.py": "", "pkg/mod.py": MODULE})
    outside = tmp_path / "elsewhere.txt"
    ctx = capability_context(root, {"workspace_id": str(tmp_path)})
    seen = _observed(ctx, "save", [f"{str(outside)!r}, 'x'", "'local.txt', 'abc'"])
    verdict, reason = seen[f"{str(outside)!r}, 'x'"]
    assert verdict == "misuse"
    assert reason.startswith("it wrote or deleted outside its own directory (")
    assert seen["'local.txt', 'abc'"][0] == "kept"  # its own directory: a tmp_path test
    assert not outside.exists()


def test_a_delete_outside_is_refused_too(tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    root = write_tree(tmp_path / "proj", {"pkg/__init__.py": "", "pkg/mod.py": MODULE})
    ctx = capability_context(root, {"workspace_id": str(tmp_path)})
    seen = _observed(ctx, "remove", [repr(str(victim))])
    assert seen[repr(str(victim))][0] == "misuse"
    assert victim.read_text() == "keep me"


def test_cases_naming_git_or_the_project_are_refused_unrun(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "proj", {"pkg/__init__.py": "", "pkg/mod.py": MODULE})
    ctx = capability_context(root, {"workspace_id": str(tmp_path)})
    git = f"{str(root / '.git' / 'config')!r}, '[core]'"
    own = f"{str(root / 'notes.txt')!r}, 'x'"
    seen = _observed(ctx, "save", [git, own, "'.gitignore', 'x'"])
    for case in (git, own):
        verdict, reason = seen[case]
        assert verdict == "misuse" and "names .git or the project's own path" in reason
    assert seen["'.gitignore', 'x'"][0] == "kept"


FORGER = """import json
import sys


def forge(x):
    with open(sys.argv[2], "a") as out:
        out.write("not json at all\\n")
        fake = {"id": 0, "returned": {"literal": "999", "kind": "value", "type": "int"}}
        out.write(json.dumps(fake) + "\\n")
    return x + 1
"""


def test_result_lines_the_project_forges_are_ignored(tmp_path: Path) -> None:
    """Project code may write to the observation child's result file (its path is in
    ``sys.argv``): its lines carry no valid signature and are ignored, where they used to
    fail the job with an opaque error or pass for the case's result (issue 47)."""
    root = write_tree(tmp_path / "proj", {"pkg/__init__.py": "", "pkg/mod.py": FORGER})
    ctx = capability_context(root, {"workspace_id": str(tmp_path)})
    seen = _observed(ctx, "forge", ["1"])
    verdict, reason = seen["1"]
    assert verdict == "misuse" and "outside its own directory" in reason  # the real record
