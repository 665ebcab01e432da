"""The ``st.builds`` baseline's child: draw arguments for one function and call it.

Run as a script (``python -P _draw_child.py MODULE QUALNAME EXAMPLES``, ``-P`` so this
directory is not on ``sys.path``): it imports only the standard library, Hypothesis and the
package under test, never Remora, and prints its result as one JSON line.
"""

from __future__ import annotations

from typing import Any


def main() -> None:
    """``python -P _draw_child.py MODULE QUALNAME EXAMPLES``: the result as the last line
    of stdout (anything the package prints goes to stderr)."""
    import contextlib
    import json
    import resource
    import sys

    limit = 2 * 1024**3  # a drawn argument must not take the machine's memory
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    with contextlib.redirect_stdout(sys.stderr):
        result = draw_and_call(sys.argv[1], sys.argv[2], int(sys.argv[3]))
    print(json.dumps(result, default=str))


def draw_and_call(module: str, qualname: str, examples: int) -> dict[str, Any]:
    """Draw ``examples`` argument sets as ``st.builds(function)`` would, then call the
    function with each (an iterator result consumed up to 100 items, lazy code being common).

    A stand-in with the function's signature and annotations records the draws, so drawing
    and calling are told apart.
    """
    import functools
    import importlib
    import inspect
    from collections import Counter
    from collections.abc import Iterator
    from itertools import islice

    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import strategies as st

    out: dict[str, Any] = {"strategy_ok": False, "draws": 0, "calls_ok": 0, "returned": 0}
    try:
        target: Any = importlib.import_module(module)
        for part in qualname.split("."):
            target = getattr(target, part)
        parameters = list(inspect.signature(target).parameters.values())
    except Exception as exc:
        error = f"cannot resolve {module}.{qualname}: {type(exc).__name__}: {exc}"
        return out | {"error": error[:300]}

    def record(*args: Any, **kwargs: Any) -> tuple[tuple[Any, ...], dict[str, Any]]:
        return args, kwargs

    drawn: list[tuple[tuple[Any, ...], dict[str, Any]]] = []

    @settings(
        max_examples=examples,
        database=None,
        derandomize=True,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        phases=[Phase.generate],
    )
    @given(st.builds(functools.update_wrapper(record, target)))
    def collect(arguments: tuple[tuple[Any, ...], dict[str, Any]]) -> None:
        drawn.append(arguments)

    try:
        collect()
    except Exception as exc:
        return out | {"error": f"cannot draw: {type(exc).__name__}: {exc}"[:300]}
    raised: Counter[str] = Counter()
    for args, kwargs in drawn:
        try:
            result = target(*args, **kwargs)
            if isinstance(result, Iterator):
                list(islice(result, 100))
            out["returned"] += 1
        except Exception as exc:
            raised[type(exc).__name__] += 1
            if isinstance(exc, TypeError | AttributeError):
                continue
        out["calls_ok"] += 1
    variadic = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
    required = [p.name for p in parameters if p.default is p.empty and p.kind not in variadic]
    unfilled = [name for name in required if not any(name in kw for _, kw in drawn)]
    return out | {
        "strategy_ok": bool(drawn),
        "draws": len(drawn),
        "raised": dict(raised),
        "unfilled": unfilled,
        "error": None,
    }


if __name__ == "__main__":
    main()
