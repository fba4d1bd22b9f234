"""Dollar prices per model, for the cost shown in stats and the `max_cost` stop.

One table, per million tokens (input, output). Cache writes cost 1.25× input, cache reads 0.1×.
Dated ids (`claude-haiku-4-5-20251001`) use their family's price. An unknown model is priced at the
highest rate in the table — a budget must never be under-estimated — and flagged so the user knows.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tether.agent.model import Usage


@dataclass(frozen=True)
class Price:
    input_per_mtok: float
    output_per_mtok: float
    known: bool = True

    def cost(self, usage: Usage) -> float:
        per_in = self.input_per_mtok / 1_000_000
        return (
            usage.input_tokens * per_in
            + usage.cache_creation_input_tokens * per_in * 1.25
            + usage.cache_read_input_tokens * per_in * 0.1
            + usage.output_tokens * self.output_per_mtok / 1_000_000
        )

    def input_cost(self, tokens: int) -> float:
        return tokens * self.input_per_mtok / 1_000_000

    def output_tokens_for(self, dollars: float) -> int:
        """How many output tokens `dollars` pays for (0 when nothing)."""
        if dollars <= 0:
            return 0
        return int(dollars * 1_000_000 / self.output_per_mtok)


# Published list prices (USD per million tokens), checked 2026-11.
PRICES: dict[str, Price] = {
    "claude-fable-5-1": Price(10.0, 50.0),
    "claude-opus-5-5": Price(4.0, 20.0),
    "claude-opus-5": Price(5.0, 25.0),
    "claude-sonnet-5-5": Price(2.0, 10.0),
    "claude-sonnet-5": Price(2.0, 10.0),
    "claude-opus-4-6": Price(5.0, 25.0),
    "claude-opus-4-5": Price(5.0, 25.0),
    "claude-opus-4-1": Price(15.0, 75.0),
    "claude-opus-4-0": Price(15.0, 75.0),
    "claude-opus-4": Price(15.0, 75.0),
    "claude-sonnet-4-6": Price(3.0, 15.0),
    "claude-sonnet-4-5": Price(3.0, 15.0),
    "claude-sonnet-4-0": Price(3.0, 15.0),
    "claude-sonnet-4": Price(3.0, 15.0),
    "claude-haiku-4-5": Price(1.0, 5.0),
    "claude-3-5-haiku": Price(0.8, 4.0),
}

_DATED = re.compile(r"-(\d{8})$")


def price_for(model: str) -> Price:
    """The model's price, or the most expensive known price with `known=False`."""
    name = _DATED.sub("", model.strip().lower())
    if name.endswith("-latest"):
        name = name[: -len("-latest")]
    price = PRICES.get(name)
    if price is not None:
        return price
    worst_in = max(p.input_per_mtok for p in PRICES.values())
    worst_out = max(p.output_per_mtok for p in PRICES.values())
    return Price(worst_in, worst_out, known=False)


def cost_of(model: str, usage: Usage) -> float:
    return price_for(model).cost(usage)
