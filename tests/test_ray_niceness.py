"""A Ray instance Remora starts runs its workers at the driver's priority (Ray's default,
niceness 15, made every job wait behind whatever else the machine was doing)."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

ray = pytest.importorskip("ray")
from remora.orchestration.ray_executor import RayWorkers  # noqa: E402
from tests.support.ray_models import Niceness  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


def test_workers_of_a_local_instance_run_at_the_drivers_niceness(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert not ray.is_initialized()
    monkeypatch.delenv("RAY_worker_niceness", raising=False)

    async def niceness() -> list[int]:
        env = {"env_vars": {"PYTHONPATH": str(REPO)}}
        async with RayWorkers(Niceness, count=1, runtime_env=env) as workers:
            return [await workers.call(0, "value")]

    assert asyncio.run(niceness()) == [os.nice(0)]
    assert not ray.is_initialized(), "the instance it started is stopped"
