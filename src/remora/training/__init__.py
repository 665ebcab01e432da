"""Training Remora's LoRA adapters for the embedded model (``remora train``).

The pipeline, one module per step: ``traces`` drives the real agents' tools with a
deterministic expert policy per agent and records each model turn; ``dataset`` keeps
them as :class:`~remora.training.dataset.TrainingExample` JSONL (the exact prompt the
backend renders, the exact completion the model should write); ``finetune`` trains a
LoRA adapter with transformers + peft on the CPU from the GGUF the runtime uses;
``export`` writes it as a llama.cpp LoRA GGUF; ``evaluate`` compares base and adapter.

torch, transformers, peft and gguf come with the ``remora[train]`` extra; only the
modules that need them import them.
"""
