"""Named LoRA adapters on one base model: several trained roles share one copy of the weights.

SeRTS trains two roles of one model with PPO, the query proposer and the grading evaluator, and
compares them with the original model (its Tab. 5). Deep copies of the model would hold the base
weights three times (three 2B models on a 16 GB GPU do not fit); LoRA makes copies unnecessary. One
peft model carries one adapter per role, and "the original model" is the same weights with every
adapter switched off (peft's ``add_adapter`` / ``set_adapter`` / ``disable_adapter_layers``).

``VLM.adapter(name)`` returns an ``AdapterView``: it behaves as the ``VLM`` (every attribute and
method is the VLM's) and switches its adapter on at each access, so code written for a ``VLM``
(``ppo_step``, ``vlm_generator``, ``generate``...) runs with that role's weights. ``name=None`` is
the base with every adapter off (``VLM.without_adapters()``). Activating an adapter also makes its
weights, and only its, require gradients (peft), so an optimiser built over a role's trainable
parameters updates that role alone.

Leaves out: merging adapters into the base, and adapters of different ranks per layer. One view is
active at a time: hold the view, never a bound method or ``view.model`` taken from another view.
"""
from __future__ import annotations

from collections.abc import Sequence

from kbvqa.models import loading


def add_named_adapter(vlm, name: str, r: int = 16, alpha: int = 32, dropout: float = 0.05,
                      target_modules: Sequence[str] = ("q_proj", "v_proj"), vision: bool = False) -> None:
    """Give ``vlm`` a LoRA adapter called ``name`` beside any it has (the first one wraps the model
    with peft); a ``ValueError`` when the name is taken. The new adapter is not activated."""
    if not isinstance(name, str) or not name:
        raise ValueError(f"an adapter needs a non-empty name, got {name!r}")
    if not hasattr(vlm.model, "peft_config"):
        vlm.model = loading.wrap_lora(vlm.model, r=r, alpha=alpha, dropout=dropout,
                                      target_modules=target_modules, vision=vision, adapter_name=name)
        return
    if name in vlm.model.peft_config:
        raise ValueError(f"the model already has an adapter called {name!r}: {sorted(vlm.model.peft_config)}")
    vlm.model.add_adapter(name, loading.lora_config(vlm.model, r=r, alpha=alpha, dropout=dropout,
                                                    target_modules=target_modules, vision=vision))


def adapter_names(vlm) -> list[str]:
    """The names of the adapters ``vlm`` carries (empty for a model without peft)."""
    return sorted(getattr(vlm.model, "peft_config", {}))


class AdapterView:
    """``vlm`` with the adapter ``name`` on (``None``: every adapter off), switched at each access."""

    def __init__(self, vlm, name: str | None):
        if name is not None and name not in adapter_names(vlm):
            raise ValueError(f"no adapter called {name!r}; the model has {adapter_names(vlm)}")
        self._vlm, self._name = vlm, name

    @property
    def adapter_name(self) -> str | None:
        return self._name

    def activate(self):
        """Switch this view's adapter on (or every adapter off) and return the underlying VLM."""
        model = self._vlm.model
        if hasattr(model, "peft_config"):
            if self._name is None:
                model.base_model.disable_adapter_layers()
            else:
                model.base_model.enable_adapter_layers()
                model.set_adapter(self._name)
        return self._vlm

    def __getattr__(self, attr):
        if attr.startswith("_"):          # copy/pickle probes, and our own fields before __init__
            raise AttributeError(attr)
        return getattr(self.activate(), attr)

    def __repr__(self) -> str:
        return f"AdapterView({self._name!r} of {self._vlm!r})"
