"""The test and sample_data operations' options: one model each, the one source of their
defaults (capabilities read them through ``ctx.options(...)``)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict


class TestOptions(BaseModel):
    """``operations.test.options``."""

    model_config = ConfigDict(extra="forbid")

    # The model's inputs for the lines the host's tests leave uncovered added no coverage
    # beyond the spread across seeds in `remora eval` (docs/evaluation.md): the host's
    # tests are the job unless model_inputs is set.
    model_inputs: bool = False
    write_test_file: bool = False
    # Argument lists (as source) the host leaves out of its own; `remora train generate`
    # withholds some so that they become the model's answers.
    withhold_cases: list[str] = []
    # Private and special names (_helper), and code under tests/, are skipped unless set.
    include_private: bool = False
    include_tests: bool = False


class SampleDataOptions(BaseModel):
    """``operations.sample_data.options``."""

    model_config = ConfigDict(extra="forbid")

    # The model's fixtures added no function with a fixture in `remora eval`
    # (docs/evaluation.md): the host alone writes them unless model_inputs is set.
    model_inputs: bool = False
    format: Literal["json", "yaml"] = "json"
    # Private and special names (_helper), and code under tests/, are skipped unless set.
    include_private: bool = False
    include_tests: bool = False
