"""The docstring operation's options: one model, the one source of their defaults (capabilities
read them through ``ctx.options(DocstringOptions)``)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict


class DocstringOptions(BaseModel):
    """``operations.docstring.options``."""

    model_config = ConfigDict(extra="forbid")

    # auto: the convention the project's docstrings already follow (google, numpy, sphinx,
    # or plain prose without sections), google where there are none to follow.
    style: Literal["auto", "google", "numpy", "sphinx", "plain"] = "auto"
    # The model writes the summary; asked for descriptions, the bundled adapter wrote
    # filler or wrong ones (docs/evaluation.md), so they are left for the person unless
    # describe is set.
    use_model: bool = True
    describe: bool = False
    # Show the model how maintainers summed up similar documented code: the project's own
    # functions first, then the index of the training corpus shipped with Remora. Off until
    # an adapter trained with them in its prompt beats the one without (docs/evaluation.md).
    similar_examples: bool = False
    missing_only: bool = False
    include_private: bool = False
    include_tests: bool = False
