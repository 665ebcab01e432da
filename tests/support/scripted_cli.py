"""The real ``remora`` command with the model replaced by the scripted policy (tests only).

Run as ``python tests/support/scripted_cli.py ARGS...``; ``REMORA_TEST_MODEL_DELAY`` sets the
seconds each scripted answer takes. Everything else — discovery, planning, the scheduler,
workspaces, manifests, signals, exit codes — is the real program.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import remora.model
from remora.cli import main
from tests.support.policy import Policy, scripted_model

POLICY = Policy(delay=float(os.environ.get("REMORA_TEST_MODEL_DELAY", "0")))
remora.model.create_client = lambda config: scripted_model(POLICY)  # type: ignore[attr-defined]

if __name__ == "__main__":
    main()
